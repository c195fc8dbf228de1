#!/usr/bin/env python3
"""Generates fortran/mpi_f08.f90, the `use mpi_f08` module (MPI-3.0 17.2 Fortran
2008 bindings), from include/mpi.h and MPICH's mpif.h values:

  - handle types TYPE(MPI_Comm), TYPE(MPI_Datatype), ... (one INTEGER
    component MPI_VAL, equal to the C handle) with == and /=, and
    TYPE(MPI_Status) (MPICH's five integers, MPI_SOURCE / MPI_TAG /
    MPI_ERROR public);
  - every constant of mpif.h, handles as named constants of their type;
  - MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, MPI_UNWEIGHTED,
    MPI_WEIGHTS_EMPTY in the same common blocks as mpif.h (the library
    recognises them by address);
  - a module procedure per routine: choice buffers TYPE(*), DIMENSION(..)
    (a non-contiguous section goes as one element of a datatype made from
    its descriptor where the buffer has a count and datatype of its own,
    the datatype is predefined and the count is the section's size; other
    sections are MPI_ERR_BUFFER, so MPI_SUBARRAYS_SUPPORTED is .FALSE.),
    handles by type, LOGICAL flags, ierror
    OPTIONAL; each calls the routine's Fortran entry point (pmpi_xxx_,
    src/fortran.rs) through an implicit interface.

Routines whose Fortran 2008 form takes procedures or C pointers (keyvals
and attribute callbacks, user ops, error handler creation, generalized
requests, MPI_Alloc_mem, MPI_Buffer_detach, the window allocations) are
written here by hand against the standard's abstract interfaces
(MPI_User_function, MPI_Comm_copy_attr_function, ...), which the module
declares with the predefined callbacks (MPI_COMM_NULL_COPY_FN, ...): the
Fortran entry points they call take those procedures as the mpif.h forms
do (a TYPE(C_PTR) passed by value is the address a by-reference array
is). The large-count forms (`MPI_Send_c`, ...) are module procedures too,
each beside its int form under one generic name (`MPI_Send`), which
picks it by the kinds of the counts; they call the `_c` forms' Fortran
entry points; the four that no overload can tell apart (MPI_Aint against
MPI_Count, one kind here) are there by their own names only. Spawn,
MPI_Register_datarep and the MPI-1 names are left out and listed in
docs/fortran.md.

Usage: gen_f08.py [--check]
"""
import re, sys, pathlib
root = pathlib.Path(__file__).resolve().parent.parent

sys.path.insert(0, str(root / "tools"))
from fortran_inputs import prototypes, entry_modules, mpif_params, newer_constants
protos = prototypes(root)
exported = set(entry_modules(root))

HANDLES = {"MPI_Comm": "MPI_Comm", "MPI_Datatype": "MPI_Datatype", "MPI_Errhandler": "MPI_Errhandler",
           "MPI_File": "MPI_File", "MPI_Group": "MPI_Group", "MPI_Info": "MPI_Info",
           "MPI_Message": "MPI_Message", "MPI_Op": "MPI_Op", "MPI_Request": "MPI_Request",
           "MPI_Session": "MPI_Session", "MPI_Win": "MPI_Win"}
KINDS = {"MPI_Aint": "MPI_ADDRESS_KIND", "MPI_Count": "MPI_COUNT_KIND", "MPI_Offset": "MPI_OFFSET_KIND"}
BUFFERS = {"buf", "sendbuf", "recvbuf", "inbuf", "outbuf", "inoutbuf", "origin_addr", "result_addr",
           "compare_addr", "location", "buffer", "base", "userbuf"}
LOGICALS = {"flag", "commute", "reorder", "high", "periods", "remain_dims"}
# Routines left out (see the docstring), and MPI-1 names MPI-3 removed
# (not part of mpi_f08).
LEFT_OUT = {"MPI_Init", "MPI_Init_thread", "MPI_Info_create_env", "MPI_Pcontrol", "MPI_Alloc_mem",
            "MPI_Buffer_detach", "MPI_Win_allocate", "MPI_Win_allocate_shared", "MPI_Win_shared_query",
            "MPI_Grequest_start", "MPI_Op_create", "MPI_Register_datarep", "MPI_Comm_spawn",
            "MPI_Comm_spawn_multiple", "MPI_Address", "MPI_Type_extent", "MPI_Type_lb", "MPI_Type_ub",
            "MPI_Type_hvector", "MPI_Type_hindexed", "MPI_Type_struct", "MPI_Keyval_create",
            "MPI_Keyval_free", "MPI_Attr_put", "MPI_Attr_get", "MPI_Attr_delete", "MPI_Errhandler_create",
            "MPI_Errhandler_set", "MPI_Errhandler_get", "MPI_Status_c2f", "MPI_Status_f2c",
            "MPI_Comm_c2f", "MPI_Comm_f2c", "MPI_Win_get_attr", "MPI_Comm_get_attr", "MPI_Type_get_attr"}

# A choice buffer's own (count, datatype) arguments, for its
# non-contiguous sections.
SECTION_PAIRS = {"buf": ("count", "datatype"), "buffer": ("count", "datatype"),
                 "sendbuf": ("sendcount", "sendtype"), "recvbuf": ("recvcount", "recvtype"),
                 "origin_addr": ("origin_count", "origin_datatype"),
                 "result_addr": ("result_count", "result_datatype"),
                 "inbuf": ("incount", "datatype"), "outbuf": ("outcount", "datatype")}

def arrayish(n):
    return (n.startswith("array_of") or n in ("counts", "displs", "sendcounts", "recvcounts", "sdispls",
            "rdispls", "ranks", "ranks1", "ranks2", "dims", "coords", "index", "edges", "sources",
            "destinations", "sourceweights", "destweights", "weights", "indices", "outcount_array",
            "periods", "remain_dims", "array_of_errcodes", "sendtypes", "recvtypes", "recvcounts",
            "degrees", "neighbors", "sizes", "subsizes", "starts", "gsizes", "distribs", "dargs", "psizes",
            "array_of_partitions", "blocklengths", "displacements", "errcodes"))

def arg(t, n, fname):
    """(declaration, expression passed to the entry point, pre-call lines) or None."""
    up = n
    base = t.replace("const ", "").strip()
    if base == "int(*)[3]":
        return (f"INTEGER, INTENT(IN) :: {up}(3, *)", up, [])
    if base in ("void *",):
        if n in BUFFERS:
            return (f"TYPE(*), DIMENSION(..), TARGET :: {up}", f"oxmpi_b_{up}",
                    [f"if (.not. is_contiguous({up})) then",
                     f"  ierr0 = MPI_ERR_BUFFER",
                     f"  if (present(ierror)) ierror = ierr0",
                     f"  return",
                     f"end if",
                     f"call c_f_pointer(c_loc({up}), oxmpi_b_{up}, [1])"])
        if n == "attribute_val" and fname.endswith("set_attr"):
            return (f"INTEGER(KIND=MPI_ADDRESS_KIND), INTENT(IN) :: {up}", up, [])
        return None
    if base == "int":
        if n in LOGICALS:
            return (f"LOGICAL, INTENT(IN) :: {up}", up, [])
        return (f"INTEGER, INTENT(IN) :: {up}", up, [])
    if base == "int *":
        dim = "(*)" if arrayish(n) else ""
        if n in LOGICALS:
            return (f"LOGICAL :: {up}{dim}", up, [])
        return (f"INTEGER :: {up}{dim}", up, [])
    if base in KINDS:
        return (f"INTEGER(KIND={KINDS[base]}), INTENT(IN) :: {up}", up, [])
    if base.endswith("*") and base[:-1].strip() in KINDS:
        k = KINDS[base[:-1].strip()]
        dim = "(*)" if arrayish(n) else ""
        return (f"INTEGER(KIND={k}) :: {up}{dim}", up, [])
    if base in HANDLES:
        return (f"TYPE({HANDLES[base]}), INTENT(IN) :: {up}", f"{up}%MPI_VAL", [])
    if base.endswith("*") and base[:-1].strip() in HANDLES:
        h = HANDLES[base[:-1].strip()]
        # Passed whole: a bind(C) type of one c_int is laid out as the int.
        if arrayish(n):
            return (f"TYPE({h}) :: {up}(*)", up, [])
        return (f"TYPE({h}) :: {up}", up, [])
    if base == "char *":
        return (f"CHARACTER(LEN=*) :: {up}", up, [])
    if base in ("struct MPI_Status *", "MPI_Status *"):
        if "statuses" in n:
            return (f"TYPE(MPI_Status) :: {up}(*)", up, [])
        return (f"TYPE(MPI_Status) :: {up}", up, [])
    return None

# ---------------------------------------------------------------- constants
params = mpif_params(root)
params += newer_constants(root, {n for n, _ in params})

TYPE_BITS = {1: "MPI_Comm", 2: "MPI_Group", 3: "MPI_Datatype", 5: "MPI_Errhandler", 6: "MPI_Op",
             7: "MPI_Info", 8: "MPI_Win", 0xb: "MPI_Request", 0xe: "MPI_Session"}
def handle_type(n, v):
    if v in ("T", "F") or n.startswith("MPI_T_") or n == "MPI_DISPLACEMENT_CURRENT":
        return None
    if n == "MPI_FILE_NULL":
        return "MPI_File"
    try:
        u = int(v) & 0xffffffff
    except ValueError:
        return None
    if u < 0x04000000 or (u >> 30) > 1:
        return None
    t = TYPE_BITS.get((u >> 26) & 0xf)
    if t == "MPI_Request" and n.startswith("MPI_MESSAGE_"):
        return "MPI_Message"
    if t and n.endswith("_KIND"):
        return None
    return t

mod = ["! The `mpi_f08` module (generated by tools/gen_f08.py; do not edit).",
       "module mpi_f08",
       "  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_loc, c_f_pointer, c_ptr",
       "  implicit none",
       "  private :: c_int, c_int64_t, c_loc, c_f_pointer, c_ptr",
       "  interface",
       "    integer(c_int) function oxmpi_f08_section(buf, count, datatype, newtype, base) &",
       "        bind(C, name='oxmpi_f08_section')",
       "      import :: c_int, c_int64_t, c_ptr",
       "      type(*), dimension(..) :: buf",
       "      integer(c_int64_t), value :: count",
       "      integer(c_int), value :: datatype",
       "      integer(c_int) :: newtype",
       "      type(c_ptr) :: base",
       "    end function oxmpi_f08_section",
       "  end interface"]
for h in HANDLES.values():
    mod += [f"  type, bind(C) :: {h}", "    integer(c_int) :: MPI_VAL", f"  end type {h}"]
mod += ["  type, bind(C) :: MPI_Status",
        "    integer(c_int) :: count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR",
        "  end type MPI_Status"]
consts = []
for n, v in params:
    if v in ("T", "F"):
        consts.append(f"  logical, parameter :: {n} = .{'true' if v == 'T' else 'false'}.")
        continue
    if n in ("MPI_SOURCE", "MPI_TAG", "MPI_ERROR"):
        continue  # components of TYPE(MPI_Status) here
    ht = handle_type(n, v)
    if ht:
        consts.append(f"  type({ht}), parameter :: {n} = {ht}({v})")
    elif n == "MPI_DISPLACEMENT_CURRENT":
        consts.append(f"  integer(kind=8), parameter :: {n} = {v}")
    else:
        consts.append(f"  integer, parameter :: {n} = {v}")
mod += consts
mod += ["  integer :: MPI_BOTTOM, MPI_IN_PLACE",
        "  type(MPI_Status) :: MPI_STATUS_IGNORE",
        "  type(MPI_Status) :: MPI_STATUSES_IGNORE(1)",
        "  integer :: MPI_ERRCODES_IGNORE(1)",
        "  integer :: MPI_UNWEIGHTED(1), MPI_WEIGHTS_EMPTY(1)",
        "  common /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE",
        "  common /MPIPRIV2/ MPI_STATUSES_IGNORE, MPI_ERRCODES_IGNORE",
        "  common /MPIFCMB5/ MPI_UNWEIGHTED",
        "  common /MPIFCMB9/ MPI_WEIGHTS_EMPTY",
        "  save /MPIPRIV1/, /MPIPRIV2/, /MPIFCMB5/, /MPIFCMB9/"]
# The standard's abstract interfaces for the procedures MPI takes, and the
# predefined attribute callbacks (the mpif.h entry points of the same names).
def attr_ifaces(obj, h):
    return [f"    subroutine MPI_{obj}_copy_attr_function(old{obj.lower()}, {obj.lower()}_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)",
            f"      import :: {h}, MPI_ADDRESS_KIND",
            f"      type({h}) :: old{obj.lower()}",
            f"      integer :: {obj.lower()}_keyval, ierror",
            "      integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out",
            "      logical :: flag",
            f"    end subroutine MPI_{obj}_copy_attr_function",
            f"    subroutine MPI_{obj}_delete_attr_function({obj.lower()}, {obj.lower()}_keyval, attribute_val, extra_state, ierror)",
            f"      import :: {h}, MPI_ADDRESS_KIND",
            f"      type({h}) :: {obj.lower()}",
            f"      integer :: {obj.lower()}_keyval, ierror",
            "      integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state",
            f"    end subroutine MPI_{obj}_delete_attr_function"]
def errh_iface(obj, h):
    return [f"    subroutine MPI_{obj}_errhandler_function({obj.lower()}, error_code)",
            f"      import :: {h}",
            f"      type({h}) :: {obj.lower()}",
            "      integer :: error_code",
            f"    end subroutine MPI_{obj}_errhandler_function"]
mod += ["  abstract interface",
        "    subroutine MPI_User_function(invec, inoutvec, len, datatype)",
        "      import :: c_ptr, MPI_Datatype",
        "      type(c_ptr), value :: invec, inoutvec",
        "      integer :: len",
        "      type(MPI_Datatype) :: datatype",
        "    end subroutine MPI_User_function"]
for obj, h in (("Comm", "MPI_Comm"), ("Type", "MPI_Datatype"), ("Win", "MPI_Win")):
    mod += attr_ifaces(obj, h)
for obj, h in (("Comm", "MPI_Comm"), ("Win", "MPI_Win"), ("File", "MPI_File"), ("Session", "MPI_Session")):
    mod += errh_iface(obj, h)
mod += ["    subroutine MPI_Grequest_query_function(extra_state, status, ierror)",
        "      import :: MPI_ADDRESS_KIND, MPI_Status",
        "      integer(kind=MPI_ADDRESS_KIND) :: extra_state",
        "      type(MPI_Status) :: status",
        "      integer :: ierror",
        "    end subroutine MPI_Grequest_query_function",
        "    subroutine MPI_Grequest_free_function(extra_state, ierror)",
        "      import :: MPI_ADDRESS_KIND",
        "      integer(kind=MPI_ADDRESS_KIND) :: extra_state",
        "      integer :: ierror",
        "    end subroutine MPI_Grequest_free_function",
        "    subroutine MPI_Grequest_cancel_function(extra_state, complete, ierror)",
        "      import :: MPI_ADDRESS_KIND",
        "      integer(kind=MPI_ADDRESS_KIND) :: extra_state",
        "      logical :: complete",
        "      integer :: ierror",
        "    end subroutine MPI_Grequest_cancel_function",
        "  end interface"]
for obj in ("COMM", "TYPE", "WIN"):
    o = obj.capitalize()
    mod += [f"  procedure(MPI_{o}_copy_attr_function) :: MPI_{obj}_NULL_COPY_FN, MPI_{obj}_DUP_FN",
            f"  procedure(MPI_{o}_delete_attr_function) :: MPI_{obj}_NULL_DELETE_FN"]

eqs = []
for op, sym in (("==", "eq"), ("/=", "ne")):
    mod.append(f"  interface operator({op})")
    mod.append("    module procedure " + ", ".join(f"oxmpi_{sym}_{h[4:].lower()}" for h in HANDLES.values()))
    mod.append(f"  end interface operator({op})")
for h in HANDLES.values():
    for sym, rel in (("eq", "=="), ("ne", "/=")):
        f = f"oxmpi_{sym}_{h[4:].lower()}"
        eqs += [f"  elemental logical function {f}(a, b)",
                f"    type({h}), intent(in) :: a, b",
                f"    {f} = a%MPI_VAL {rel} b%MPI_VAL",
                f"  end function {f}"]

# ---------------------------------------------------------------- routines
procs, names, left = [], [], []
# Large-count overloads: generic name -> the `_c` procedure beside it.
overloads = {}
# The dummies' types, kinds and ranks of each generated routine, to tell
# whether its `_c` form is distinguishable from it (MPI_ADDRESS_KIND,
# MPI_COUNT_KIND and MPI_OFFSET_KIND are the same kind here).
shapes = {}

def shape(decl):
    spec, _, var = decl.partition("::")
    spec = re.sub(r",\s*(INTENT\(\w+\)|TARGET)", "", spec.strip().upper(), flags=re.I)
    spec = re.sub(r"INTEGER\(KIND=MPI_(ADDRESS|COUNT|OFFSET)_KIND\)", "INTEGER8", spec)
    return (spec, "(" in var)

def distinguishable(a, b):
    return len(a) != len(b) or any(x != y and "TYPE(*)" not in x[0] for x, y in zip(a, b))

# The `_c` forms come after every routine they overload.
ordered = [p for p in protos if not p[1].endswith("_c")] + [p for p in protos if p[1].endswith("_c")]
for ret, name, ps in ordered:
    if name not in exported or name in LEFT_OUT or name.startswith("MPI_T_"):
        continue
    if ret != "int":
        continue
    if name.endswith("_c") and name[:-2] not in shapes:
        # Its int form is written by hand or left out.
        continue
    decls, call, pre, ptrs = [], [], [], []
    ok = True
    for t, n in ps:
        a = arg(t, n, name)
        if a is None:
            ok = False
            break
        d, e, p = a
        decls.append(d)
        call.append(e)
        pre += p
        if e.startswith("oxmpi_b_"):
            ptrs.append(e)
    if not ok:
        if not name.endswith("_c"):
            left.append(name)
        continue
    if name.endswith("_c"):
        if distinguishable(shapes[name[:-2]], [shape(d) for d in decls]):
            overloads[name[:-2]] = name
        # Else the same kinds as the int form (MPI_Aint against
        # MPI_Count): no overload can tell them apart; callable by its
        # own name only.
    else:
        shapes[name] = [shape(d) for d in decls]
    names.append(name)
    argn = [n for _, n in ps] + ["ierror"]
    # Non-contiguous sections of the buffers that have a (count, datatype)
    # pair of their own: passed as one element of a datatype made from the
    # section's descriptor (oxmpi_f08_section); the others stay refused.
    pnames = [n for _, n in ps]
    ptype = {n: t.replace("const ", "").strip() for t, n in ps}
    pairs = {}
    for b in pnames:
        if b not in BUFFERS:
            continue
        pair = SECTION_PAIRS.get(b)
        if pair and all(x in ptype for x in pair) and ptype[pair[0]] in ("int", "MPI_Count") \
                and ptype[pair[1]] == "MPI_Datatype":
            pairs[b] = pair
    used = [x for pr in pairs.values() for x in pr]
    pairs = {b: pr for b, pr in pairs.items() if used.count(pr[0]) == 1 and used.count(pr[1]) == 1}
    locals_, post = [], []
    for b, (c, d) in pairs.items():
        kind = "MPI_COUNT_KIND" if ptype[c] == "MPI_Count" else "kind(1)"
        locals_ += [f"integer(kind={kind}) :: oxmpi_n_{b}", f"integer :: oxmpi_t_{b}",
                    f"type(c_ptr) :: oxmpi_p_{b}", f"logical :: oxmpi_f_{b}"]
        i = pre.index(f"call c_f_pointer(c_loc({b}), oxmpi_b_{b}, [1])")
        j = pre.index(f"if (.not. is_contiguous({b})) then")
        pre[j:i + 1] = [f"oxmpi_n_{b} = {c}", f"oxmpi_t_{b} = {d}%MPI_VAL", f"oxmpi_f_{b} = .false.",
                        f"if (is_contiguous({b})) then",
                        f"  call c_f_pointer(c_loc({b}), oxmpi_b_{b}, [1])",
                        "else",
                        f"  ierr0 = oxmpi_f08_section({b}, int({c}, c_int64_t), {d}%MPI_VAL, oxmpi_t_{b}, oxmpi_p_{b})",
                        "  if (ierr0 /= 0) then",
                        "    if (present(ierror)) ierror = ierr0",
                        "    return",
                        "  end if",
                        f"  oxmpi_n_{b} = 1",
                        f"  oxmpi_f_{b} = .true.",
                        f"  call c_f_pointer(oxmpi_p_{b}, oxmpi_b_{b}, [1])",
                        "end if"]
        call[pnames.index(c)] = f"oxmpi_n_{b}"
        call[pnames.index(d)] = f"oxmpi_t_{b}"
        post += [f"if (oxmpi_f_{b}) then", f"  oxmpi_d%MPI_VAL = oxmpi_t_{b}",
                 "  call pmpi_type_free(oxmpi_d, oxmpi_e)", "end if"]
    body = [f"  subroutine {name}({', '.join(argn)})"]
    body += ["    " + d for d in decls]
    body.append("    integer, optional, intent(out) :: ierror")
    body.append("    integer :: ierr0")
    body += ["    " + l for l in locals_]
    if post:
        body.append("    integer :: oxmpi_e")
        body.append("    type(MPI_Datatype) :: oxmpi_d")
        body.append("    external :: pmpi_type_free")
    if ptrs:
        body.append("    integer(kind=1), pointer :: " + ", ".join(f"{p}(:)" for p in ptrs))
    body.append(f"    external :: p{name.lower()}")
    body += ["    " + l for l in pre]
    body.append(f"    call p{name.lower()}({', '.join(call + ['ierr0'])})")
    body += ["    " + l for l in post]
    body.append("    if (present(ierror)) ierror = ierr0")
    body.append(f"  end subroutine {name}")
    procs += body
# MPI_Init and MPI_Init_thread (no argc/argv), the clocks and address arithmetic.
procs += ["  subroutine MPI_Init(ierror)",
          "    integer, optional, intent(out) :: ierror",
          "    integer :: ierr0",
          "    external :: pmpi_init",
          "    call pmpi_init(ierr0)",
          "    if (present(ierror)) ierror = ierr0",
          "  end subroutine MPI_Init",
          "  subroutine MPI_Init_thread(required, provided, ierror)",
          "    integer, intent(in) :: required",
          "    integer, intent(out) :: provided",
          "    integer, optional, intent(out) :: ierror",
          "    integer :: ierr0",
          "    external :: pmpi_init_thread",
          "    call pmpi_init_thread(required, provided, ierr0)",
          "    if (present(ierror)) ierror = ierr0",
          "  end subroutine MPI_Init_thread",
          "  double precision function MPI_Wtime()",
          "    double precision, external :: pmpi_wtime",
          "    MPI_Wtime = pmpi_wtime()",
          "  end function MPI_Wtime",
          "  double precision function MPI_Wtick()",
          "    double precision, external :: pmpi_wtick",
          "    MPI_Wtick = pmpi_wtick()",
          "  end function MPI_Wtick",
          "  subroutine MPI_Info_create_env(info, ierror)",
          "    type(MPI_Info) :: info",
          "    integer, optional, intent(out) :: ierror",
          "    integer :: ierr0",
          "    external :: pmpi_info_create_env",
          "    call pmpi_info_create_env(0, 0, info, ierr0)",
          "    if (present(ierror)) ierror = ierr0",
          "  end subroutine MPI_Info_create_env",
          "  integer(kind=MPI_ADDRESS_KIND) function MPI_Aint_add(base, disp)",
          "    integer(kind=MPI_ADDRESS_KIND), intent(in) :: base, disp",
          "    MPI_Aint_add = base + disp",
          "  end function MPI_Aint_add",
          "  integer(kind=MPI_ADDRESS_KIND) function MPI_Aint_diff(addr1, addr2)",
          "    integer(kind=MPI_ADDRESS_KIND), intent(in) :: addr1, addr2",
          "    MPI_Aint_diff = addr1 - addr2",
          "  end function MPI_Aint_diff"]
names += ["MPI_Init", "MPI_Init_thread", "MPI_Info_create_env", "MPI_Wtime", "MPI_Wtick", "MPI_Aint_add", "MPI_Aint_diff"]

def by_hand(name, args, decls, call):
    """A routine written here: `args` its dummies (ierror added), `decls`
    their declarations, `call` the entry point's arguments (ierr0 added)."""
    return ([f"  subroutine {name}({', '.join(args + ['ierror'])})"]
            + ["    " + d for d in decls]
            + ["    integer, optional, intent(out) :: ierror",
               "    integer :: ierr0",
               f"    external :: p{name.lower()}",
               f"    call p{name.lower()}({', '.join(call + ['ierr0'])})",
               "    if (present(ierror)) ierror = ierr0",
               f"  end subroutine {name}"])

hand = [("MPI_Op_create", ["user_fn", "commute", "op"],
         ["procedure(MPI_User_function) :: user_fn", "logical, intent(in) :: commute", "type(MPI_Op) :: op"],
         ["user_fn", "commute", "op"])]
for obj, h in (("Comm", "MPI_Comm"), ("Type", "MPI_Datatype"), ("Win", "MPI_Win")):
    o = obj.lower()
    hand += [(f"MPI_{obj}_create_keyval",
              [f"{o}_copy_attr_fn", f"{o}_delete_attr_fn", f"{o}_keyval", "extra_state"],
              [f"procedure(MPI_{obj}_copy_attr_function) :: {o}_copy_attr_fn",
               f"procedure(MPI_{obj}_delete_attr_function) :: {o}_delete_attr_fn",
               f"integer, intent(out) :: {o}_keyval",
               "integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state"],
              [f"{o}_copy_attr_fn", f"{o}_delete_attr_fn", f"{o}_keyval", "extra_state"]),
             (f"MPI_{obj}_get_attr", [o, f"{o}_keyval", "attribute_val", "flag"],
              [f"type({h}), intent(in) :: {o}", f"integer, intent(in) :: {o}_keyval",
               "integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val", "logical, intent(out) :: flag"],
              [f"{o}%MPI_VAL", f"{o}_keyval", "attribute_val", "flag"])]
for obj in ("Comm", "Win", "File", "Session"):
    o = obj.lower()
    hand.append((f"MPI_{obj}_create_errhandler", [f"{o}_errhandler_fn", "errhandler"],
                 [f"procedure(MPI_{obj}_errhandler_function) :: {o}_errhandler_fn",
                  "type(MPI_Errhandler), intent(out) :: errhandler"],
                 [f"{o}_errhandler_fn", "errhandler"]))
hand += [("MPI_Grequest_start", ["query_fn", "free_fn", "cancel_fn", "extra_state", "request"],
          ["procedure(MPI_Grequest_query_function) :: query_fn",
           "procedure(MPI_Grequest_free_function) :: free_fn",
           "procedure(MPI_Grequest_cancel_function) :: cancel_fn",
           "integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state",
           "type(MPI_Request), intent(out) :: request"],
          ["query_fn", "free_fn", "cancel_fn", "extra_state", "request"]),
         ("MPI_Alloc_mem", ["size", "info", "baseptr"],
          ["integer(kind=MPI_ADDRESS_KIND), intent(in) :: size", "type(MPI_Info), intent(in) :: info",
           "type(c_ptr), intent(out) :: baseptr"],
          ["size", "info%MPI_VAL", "baseptr"]),
         ("MPI_Buffer_detach", ["buffer_addr", "size"],
          ["type(c_ptr), intent(out) :: buffer_addr", "integer, intent(out) :: size"],
          ["buffer_addr", "size"]),
         ("MPI_Win_allocate", ["size", "disp_unit", "info", "comm", "baseptr", "win"],
          ["integer(kind=MPI_ADDRESS_KIND), intent(in) :: size", "integer, intent(in) :: disp_unit",
           "type(MPI_Info), intent(in) :: info", "type(MPI_Comm), intent(in) :: comm",
           "type(c_ptr), intent(out) :: baseptr", "type(MPI_Win), intent(out) :: win"],
          ["size", "disp_unit", "info%MPI_VAL", "comm%MPI_VAL", "baseptr", "win"]),
         ("MPI_Win_allocate_shared", ["size", "disp_unit", "info", "comm", "baseptr", "win"],
          ["integer(kind=MPI_ADDRESS_KIND), intent(in) :: size", "integer, intent(in) :: disp_unit",
           "type(MPI_Info), intent(in) :: info", "type(MPI_Comm), intent(in) :: comm",
           "type(c_ptr), intent(out) :: baseptr", "type(MPI_Win), intent(out) :: win"],
          ["size", "disp_unit", "info%MPI_VAL", "comm%MPI_VAL", "baseptr", "win"]),
         ("MPI_Win_shared_query", ["win", "rank", "size", "disp_unit", "baseptr"],
          ["type(MPI_Win), intent(in) :: win", "integer, intent(in) :: rank",
           "integer(kind=MPI_ADDRESS_KIND), intent(out) :: size", "integer, intent(out) :: disp_unit",
           "type(c_ptr), intent(out) :: baseptr"],
          ["win%MPI_VAL", "rank", "size", "disp_unit", "baseptr"])]
for name, args, decls, call in hand:
    procs += by_hand(name, args, decls, call)
    names.append(name)
# MPI_Pcontrol: no ierror in any binding.
procs += ["  subroutine MPI_Pcontrol(level)",
          "    integer, intent(in) :: level",
          "    external :: pmpi_pcontrol",
          "    call pmpi_pcontrol(level)",
          "  end subroutine MPI_Pcontrol"]
names.append("MPI_Pcontrol")
# The generic names: each routine and its large-count form (MPI-4.0 19.2).
for base, c in overloads.items():
    mod += [f"  interface {base}", f"    module procedure {base}, {c}", f"  end interface {base}"]
mod += ["contains"] + eqs + procs + ["end module mpi_f08"]
text = "\n".join(mod) + "\n"
# Free form: continue long lines.
out = []
for l in text.splitlines():
    while len(l) > 130:
        cut = l.rfind(",", 0, 125)
        out.append(l[:cut + 1] + " &")
        l = "      " + l[cut + 1:].lstrip()
    out.append(l)
text = "\n".join(out) + "\n"
p = root / "fortran/mpi_f08.f90"
if "--check" in sys.argv:
    if not p.exists() or p.read_text() != text:
        print("stale (run python3 tools/gen_f08.py): fortran/mpi_f08.f90")
        sys.exit(1)
else:
    p.write_text(text)
    gone = (set(left) | (LEFT_OUT & exported)) - set(names)
    (root / "fortran/mpi_f08_left_out.txt").write_text("\n".join(sorted(gone)) + "\n")
print(f"mpi_f08: {len(names)} routines")

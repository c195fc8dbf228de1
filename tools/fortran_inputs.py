"""What the Fortran generators (gen_fortran.py, gen_f08.py) read: the C
prototypes of include/mpi.h, the Rust module of each entry point, and the
constants of MPICH 4.0.2's mpif.h plus the newer ones of the C header."""
import re


def prototypes(root):
    """(return type, name, [(C type, parameter name)]) of every MPI_
    prototype in include/mpi.h; variadic ones (MPI_Pcontrol) left out."""
    hdr = (root / "include/mpi.h").read_text()
    protos = []
    for m in re.finditer(r"^(int|double|MPI_Aint) (MPI_\w+)\(([^;]*)\);", hdr, re.M):
        ret, name, params = m.group(1), m.group(2), " ".join(m.group(3).split())
        if "..." in params:
            continue
        ps = []
        if params.strip() not in ("", "void"):
            for p in params.split(","):
                p = p.strip()
                mm = re.match(r"^(.*?)\(\*(\w+)\)\[3\]$", p)
                if mm:
                    ps.append(("int(*)[3]", mm.group(2)))
                    continue
                mm = re.match(r"^(.*?)(\w+)$", p)
                ps.append((mm.group(1).strip(), mm.group(2)))
        protos.append((ret, name, ps))
    return protos


def entry_modules(root):
    """Name -> Rust module (file stem) of every exported entry point; the
    collectives' generated forms and large-count forms count as abi::coll's,
    which re-exports them."""
    mod_of = {}
    for f in (root / "src/abi").glob("*.rs"):
        for m in re.finditer(r'extern "C" fn (MPI_\w+)\(', f.read_text()):
            mod_of[m.group(1)] = f.stem
    for f in ("forms.rs", "large_forms.rs", "large.rs"):
        for m in re.finditer(r'extern "C" fn (MPI_\w+)\(', (root / "src/abi/coll" / f).read_text()):
            mod_of[m.group(1)] = "coll"
    return mod_of


def mpif_params(root):
    """(name, value) of every PARAMETER of MPICH 4.0.2's mpif.h, in order."""
    out = []
    for line in (root / "tests/data/mpich-4.0.2-mpif-params.tsv").read_text().splitlines():
        n, v = line.split("\t")
        out.append((n, v))
    return out


def newer_constants(root, have):
    """(name, decimal value) of the C header's int constants that mpif.h
    lacks (names not in `have`, at most 31 characters)."""
    out = []
    for line in (root / "tests/data/mpich-4.0.2-constants.tsv").read_text().splitlines():
        if line.startswith("#"):
            continue
        n, ctype, dec, _ = line.split("\t")
        if ctype == "int" and (n.startswith("MPI_") or n.startswith("MPIX_")) and n not in have and len(n) <= 31:
            out.append((n, dec))
    return out

//! `#[mpi_fn]`: the one wrapper around every OxMPI C entry point.
//!
//! Applied to `#[no_mangle] pub unsafe extern "C" fn MPI_Xxx(args) -> c_int { body }`
//! where `body` evaluates to `crate::core::error::Result<()>`, it emits:
//!
//! * `__oxmpi_body_MPI_Xxx`, an `unsafe fn` holding the body and returning
//!   its `Result` (for another entry point that takes the same path under
//!   its own name, such as the large-count `MPI_Xxx_c` forms);
//! * `MPI_Xxx` and `PMPI_Xxx`, both calling that private function through
//!   `crate::abi::guard::enter`, which catches panics, routes errors to the
//!   error handler of the argument named `comm`, else of one named `win`
//!   or `session` (or of `MPI_COMM_WORLD`) and
//!   returns the MPI error code. The two symbols never call each other, so a
//!   profiling tool that interposes `MPI_Xxx` and calls `PMPI_Xxx` cannot loop.
//!
//! Functions that do not return `c_int` (`MPI_Wtime`, `MPI_Wtick`, the
//! `*_c2f`/`*_f2c` conversions) are only duplicated as `PMPI_Xxx`.
//!
//! A collective's entry points (by name) first count the call on its
//! communicator (`crate::abi::guard::coll_entered`, for the hang report).
//!
//! `#[mpi_fn(fast = path)]` tries `path(args) -> Option<c_int>` first,
//! outside the unwinding boundary and the diagnosis notes
//! (`crate::abi::guard::fast_open`): a call it completes (Some) costs no more
//! than itself; None takes the path above. It must not panic (a panic
//! there aborts the process) and must change nothing when it answers None.
//!
//! `#[mpi_fn(tools)]` (the `MPI_T_` tools interface) goes through
//! `crate::abi::tools::enter` instead, which returns the error code
//! without calling any error handler, as the standard says of `MPI_T_`.
//!
//! cbindgen reads the source before expansion, so it sees the
//! `#[no_mangle] extern "C"` signature as written and puts it in mpi.h.
use proc_macro::TokenStream;

/// The collectives whose entry points count their calls per communicator
/// for the hang report (`crate::abi::guard::coll_entered`): the blocking,
/// nonblocking (`I` prefix), persistent (`_init`) and large-count (`_c`)
/// forms of these.
const COLLECTIVES: &[&str] = &[
    "barrier",
    "bcast",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgather",
    "allgatherv",
    "alltoall",
    "alltoallv",
    "alltoallw",
    "reduce",
    "allreduce",
    "reduce_scatter",
    "reduce_scatter_block",
    "scan",
    "exscan",
    "neighbor_allgather",
    "neighbor_allgatherv",
    "neighbor_alltoall",
    "neighbor_alltoallv",
    "neighbor_alltoallw",
];

fn is_collective(name: &str) -> bool {
    let Some(base) = name.strip_prefix("MPI_") else {
        return false;
    };
    let base = base.to_ascii_lowercase();
    let base = base.strip_suffix("_c").unwrap_or(&base);
    let base = base.strip_suffix("_init").unwrap_or(base);
    COLLECTIVES.contains(&base)
        || base
            .strip_prefix('i')
            .is_some_and(|b| COLLECTIVES.contains(&b))
}
use quote::{format_ident, quote};
use syn::{parse_macro_input, FnArg, ItemFn, Pat, ReturnType, Type};

#[proc_macro_attribute]
pub fn mpi_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr_s = attr.to_string();
    let tools = attr_s.trim() == "tools";
    // `fast = path`: a function of the same arguments returning
    // Option<c_int>, tried first outside the unwinding boundary (`fast`
    // below).
    let fast: Option<syn::Path> = attr_s
        .split_once('=')
        .filter(|(k, _)| k.trim() == "fast")
        .map(|(_, v)| syn::parse_str(v.trim()).expect("#[mpi_fn(fast = path)]"));
    let f = parse_macro_input!(item as ItemFn);
    let name = f.sig.ident.clone();
    let name_str = name.to_string();
    let pname = format_ident!("P{}", name);
    let inner = format_ident!("__oxmpi_impl_{}", name);
    let body_fn = format_ident!("__oxmpi_body_{}", name);
    let attrs: Vec<_> = f
        .attrs
        .iter()
        .filter(|a| !a.path().is_ident("no_mangle"))
        .collect();
    let inputs = &f.sig.inputs;
    let mut args = Vec::new();
    // The object whose error handler takes the call's errors: a `comm`
    // argument, else a `win` or `session` argument (the guard tells them
    // apart by the handle's kind).
    let mut has_comm = None;
    for a in inputs {
        if let FnArg::Typed(pt) = a {
            if let Pat::Ident(pi) = &*pt.pat {
                if (pi.ident == "comm"
                    || ((pi.ident == "win" || pi.ident == "session") && has_comm.is_none()))
                    && matches!(&*pt.ty, Type::Path(_))
                {
                    has_comm = Some(pi.ident.clone());
                }
                args.push(pi.ident.clone());
            }
        }
    }
    let output = &f.sig.output;
    let returns_int = match output {
        ReturnType::Type(_, t) => match &**t {
            Type::Path(p) => p
                .path
                .segments
                .last()
                .map(|s| s.ident == "c_int")
                .unwrap_or(false),
            _ => false,
        },
        ReturnType::Default => false,
    };
    let body = &f.block;
    let vis = &f.vis;
    if !returns_int {
        return quote! {
            #(#attrs)*
            #[no_mangle]
            #vis unsafe extern "C" fn #name(#inputs) #output #body
            #[doc(hidden)]
            #[no_mangle]
            #vis unsafe extern "C" fn #pname(#inputs) #output #body
        }
        .into();
    }
    let comm_expr = match &has_comm {
        Some(id) => quote!(Some(#id)),
        None => quote!(None),
    };
    let count_coll = match &has_comm {
        Some(id) if id == "comm" && is_collective(&name_str) => {
            quote!(crate::abi::guard::coll_entered(&__OXMPI_NAME, comm);)
        }
        _ => quote!(),
    };
    let enter = if tools {
        quote! {
            crate::abi::tools::enter(&__OXMPI_NAME, move || -> crate::core::error::Result<()> {
                #body_fn(#(#args),*)
            })
        }
    } else {
        quote! {
            let __comm: Option<::std::os::raw::c_int> = #comm_expr;
            crate::abi::guard::enter(&__OXMPI_NAME, __comm, move || -> crate::core::error::Result<()> {
                #body_fn(#(#args),*)
            })
        }
    };
    let try_fast = match &fast {
        Some(p) => quote! {
            if crate::abi::guard::fast_open(&__OXMPI_NAME) {
                if let Some(rc) = #p(#(#args),*) {
                    return rc;
                }
            }
        },
        None => quote!(),
    };
    // With a fast path the general one is a function of its own, out of
    // line: the entry's frame is then the fast path's alone (the general
    // path's closure, built first, cost the fast path's calls its frame
    // and stores: docs/performance.md).
    let general = match &fast {
        Some(_) => quote! {
            #[allow(non_snake_case, clippy::too_many_arguments, unused_unsafe, unused_mut)]
            #[inline(never)]
            unsafe fn __oxmpi_general(#inputs) -> ::std::os::raw::c_int {
                #count_coll
                #enter
            }
            #try_fast
            // SAFETY: same contract as the caller's.
            unsafe { __oxmpi_general(#(#args),*) }
        },
        None => quote! {
            #count_coll
            #enter
        },
    };
    quote! {
        #[allow(non_snake_case, clippy::too_many_arguments, unused_unsafe, unused_mut)]
        #[inline(always)]
        unsafe fn #inner(#inputs) -> ::std::os::raw::c_int {
            static __OXMPI_NAME: &str = #name_str;
            #general
        }
        /// The entry point's body, for another entry point that takes the
        /// same path (the large-count `_c` forms) and reports its errors
        /// under its own name.
        ///
        /// Safe code: the pointer arguments are the C caller's and are read
        /// and written only through the boundary helpers (`abi::ptr` and
        /// the array readers beside the entry points), which check NULL and
        /// the sentinels and rely on MPI's rules for the rest; anything
        /// else unsafe sits in its own block with its reason.
        #[allow(non_snake_case, clippy::too_many_arguments, unused_mut, dead_code)]
        #[inline(always)]
        pub(crate) fn #body_fn(#inputs) -> crate::core::error::Result<()> {
            #body
        }
        #(#attrs)*
        #[no_mangle]
        #vis unsafe extern "C" fn #name(#inputs) -> ::std::os::raw::c_int {
            // SAFETY: same contract as the caller's.
            unsafe { #inner(#(#args),*) }
        }
        #[doc(hidden)]
        #[no_mangle]
        #vis unsafe extern "C" fn #pname(#inputs) -> ::std::os::raw::c_int {
            // SAFETY: same contract as the caller's.
            unsafe { #inner(#(#args),*) }
        }
    }
    .into()
}

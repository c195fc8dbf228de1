//! Info objects: ordered (key, value) string pairs. MPI_INFO_ENV is read-only.

use super::consts::*;
use super::ptr::{cstr, inp, out, write_cstr};
use super::MPI_Info;
use crate::core::error::Result;
use crate::core::info as table;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int};

fn key_arg(key: *const c_char) -> Result<String> {
    if key.is_null() {
        return Err(err!(MPI_ERR_INFO_KEY, "key=NULL"));
    }
    let k = cstr(key, "key")?;
    if k.is_empty() || k.len() > MPI_MAX_INFO_KEY as usize {
        return Err(err!(
            MPI_ERR_INFO_KEY,
            "key \"{k}\" must have 1 to {MPI_MAX_INFO_KEY} characters"
        ));
    }
    Ok(k)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(info: *mut MPI_Info) -> c_int {
    let h = table::insert(Vec::new());
    out(info, "info", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(
    info: MPI_Info,
    key: *const c_char,
    value: *const c_char,
) -> c_int {
    let k = key_arg(key)?;
    if value.is_null() {
        return Err(err!(MPI_ERR_INFO_VALUE, "value=NULL"));
    }
    let v = cstr(value, "value")?;
    if v.len() > MPI_MAX_INFO_VAL as usize {
        return Err(err!(
            MPI_ERR_INFO_VALUE,
            "value of {} characters is longer than MPI_MAX_INFO_VAL",
            v.len()
        ));
    }
    table::with_mut(info, |kv| match kv.iter_mut().find(|(kk, _)| *kk == k) {
        Some(e) => e.1 = v,
        None => kv.push((k, v)),
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get(
    info: MPI_Info,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    let k = key_arg(key)?;
    if valuelen < 0 {
        return Err(err!(
            MPI_ERR_ARG,
            "valuelen={valuelen} must be non-negative"
        ));
    }
    let v = table::get(info)?
        .into_iter()
        .find(|(kk, _)| *kk == k)
        .map(|e| e.1.clone());
    match v {
        Some(v) => {
            write_cstr(value, valuelen as usize + 1, &v)?;
            out(flag, "flag", 1)
        }
        None => out(flag, "flag", 0),
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_string(
    info: MPI_Info,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    let k = key_arg(key)?;
    let len = inp(buflen, "buflen")?;
    let v = table::get(info)?
        .into_iter()
        .find(|(kk, _)| *kk == k)
        .map(|e| e.1.clone());
    match v {
        Some(v) => {
            if len > 0 {
                write_cstr(value, len as usize, &v)?;
            }
            out(buflen, "buflen", v.len() as c_int + 1)?;
            out(flag, "flag", 1)
        }
        None => out(flag, "flag", 0),
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_valuelen(
    info: MPI_Info,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    let k = key_arg(key)?;
    let v = table::get(info)?
        .into_iter()
        .find(|(kk, _)| *kk == k)
        .map(|e| e.1.len());
    match v {
        Some(n) => {
            out(valuelen, "valuelen", n as c_int)?;
            out(flag, "flag", 1)
        }
        None => out(flag, "flag", 0),
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> c_int {
    let n = table::get(info)?.len() as c_int;
    out(nkeys, "nkeys", n)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    let kv = table::get(info)?;
    if n < 0 || n as usize >= kv.len() {
        return Err(err!(MPI_ERR_ARG, "n={n} is not in 0..{}", kv.len()));
    }
    let k = kv[n as usize].0.clone();
    write_cstr(key, MPI_MAX_INFO_KEY as usize + 1, &k).map(|_| ())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    let k = key_arg(key)?;
    table::with_mut(info, |kv| {
        let before = kv.len();
        kv.retain(|(kk, _)| *kk != k);
        if kv.len() == before {
            return Err(err!(
                MPI_ERR_INFO_NOKEY,
                "key \"{k}\" is not in the info object"
            ));
        }
        Ok(())
    })?
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    let h = table::insert(table::get(info)?);
    out(newinfo, "newinfo", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(info: *mut MPI_Info) -> c_int {
    let h = inp(info, "info")?;
    table::remove(h)?;
    out(info, "info", MPI_INFO_NULL)
}

/// MPI-4.0 11.2.1: an info object like MPI_INFO_ENV, with the command and
/// arguments taken from `argc`/`argv` where the program passes them.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create_env(
    argc: c_int,
    argv: *mut *mut c_char,
    info: *mut MPI_Info,
) -> c_int {
    let mut kv = table::env_pairs();
    if argc > 0 && !argv.is_null() {
        // SAFETY: main's argv holds argc strings (the caller's contract).
        let args: Vec<String> = (0..argc as usize)
            .map(|i| unsafe { *argv.add(i) })
            .take_while(|p| !p.is_null())
            .map(|p| cstr(p, "argv[i]"))
            .collect::<Result<_>>()?;
        kv.retain(|(k, _)| k != "command" && k != "argv");
        if let Some((cmd, rest)) = args.split_first() {
            kv.insert(0, ("command".into(), cmd.clone()));
            if !rest.is_empty() {
                kv.insert(1, ("argv".into(), rest.join(" ")));
            }
        }
    }
    out(info, "info", table::insert(kv))
}

//! The command line: options, blocks (MPMD) and --help.

use crate::place::{self, HostSpec, MapBy};

/// One program block of the command line (`:` separates them, MPMD): its
/// rank count, environment and working directory.
pub(crate) struct App {
    pub(crate) n: usize,
    /// Whether -n was given (with hosts and no -n, the job fills the slots).
    pub(crate) n_given: bool,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) wdir: Option<String>,
    pub(crate) prog: Vec<String>,
}

/// How each rank is pinned (`--bind-to`).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Bind {
    None,
    /// One CPU per rank (`core`, `hwthread`, `cpu`).
    Cpu,
    /// The CPUs of the package (socket) of the rank's CPU.
    Socket,
    /// The CPUs of the NUMA node of the rank's CPU.
    Numa,
}

impl Bind {
    /// `--bind-to`'s words (also how mpirun tells a proxy).
    pub(crate) fn parse(v: &str) -> Option<Bind> {
        Some(match v {
            "none" => Bind::None,
            "core" | "hwthread" | "cpu" => Bind::Cpu,
            "socket" | "package" => Bind::Socket,
            "numa" => Bind::Numa,
            _ => return None,
        })
    }

    /// The word `parse` reads back.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Bind::None => "none",
            Bind::Cpu => "cpu",
            Bind::Socket => "socket",
            Bind::Numa => "numa",
        }
    }
}

/// A positive count from the command line, or the error `what`.
fn positive(v: &str, what: impl FnOnce() -> String) -> usize {
    v.parse()
        .ok()
        .filter(|&k: &usize| k > 0)
        .unwrap_or_else(|| bad(&what()))
}

pub(crate) struct Opts {
    pub(crate) apps: Vec<App>,
    /// `-genv`: for every block.
    pub(crate) env: Vec<(String, String)>,
    pub(crate) timeout: Option<f64>,
    pub(crate) tag: bool,
    /// Unset: one CPU per rank (`cpu_of`).
    pub(crate) bind: Option<Bind>,
    pub(crate) report_bindings: bool,
    /// `--output-filename DIR`: each rank's stdout and stderr go to
    /// DIR/1/rank.R/{stdout,stderr} (Open MPI's layout).
    pub(crate) output_dir: Option<String>,
    /// `--host`, `-H`, `-hosts`, in order (empty: this host only).
    pub(crate) hosts: Vec<HostSpec>,
    /// `--hostfile`, `-f`, `--machinefile`: read when placing.
    pub(crate) hostfile: Option<String>,
    /// `-ppn N`, `--npernode N`, `--map-by ppr:N:node`.
    pub(crate) ppn: Option<usize>,
    pub(crate) map_by: MapBy,
    pub(crate) oversubscribe: bool,
    /// `--launcher-exec AGENT` (also `OXMPI_LAUNCHER`, Open MPI's
    /// `--mca plm_rsh_agent AGENT`): runs `AGENT HOST COMMAND`; else ssh.
    pub(crate) launcher: Option<String>,
    /// `--prefix DIR`: mpirun is DIR/bin/mpirun on the other hosts.
    pub(crate) prefix: Option<String>,
}

impl Opts {
    pub(crate) fn size(&self) -> usize {
        self.apps.iter().map(|a| a.n).sum()
    }

    /// The host list from `--host` and `--hostfile` (empty: this host only).
    pub(crate) fn host_specs(&self) -> Vec<HostSpec> {
        let mut v = self.hosts.clone();
        if let Some(f) = &self.hostfile {
            let text = std::fs::read_to_string(f)
                .unwrap_or_else(|e| bad(&format!("--hostfile {f}: cannot read it: {e}")));
            v.extend(
                place::parse_hostfile(&text)
                    .unwrap_or_else(|e| bad(&format!("--hostfile {f}: {e}"))),
            );
        }
        v
    }
}

pub(crate) const HELP: &str = "\
Usage: mpirun [options] program [args...] [: [block options] program [args...]]...
       (also mpiexec)

Starts the ranks of an MPI job, on this host or on several, and serves
them PMI-1.

Ranks and programs (per block; blocks separated by ':' run as one job, MPMD,
ranks numbered across the blocks in order, MPI_APPNUM = the block's index):
  -n N, -np N, -c N         number of ranks of the block (default 1)
  -x VAR[=VALUE]            set VAR for the block's ranks (without a value:
                            this environment's value)
  -env VAR VALUE            the same, MPICH's spelling
  -wdir DIR, --wdir DIR     working directory of the block's ranks
                            (also -wd, --wd)

Hosts (without any, every rank runs on this host):
  --host H[:N],..., -H, -host, -hosts
                            the hosts and their slots (a name without :N is
                            one slot each time it is named)
  --hostfile FILE, -f FILE, --machinefile FILE
                            one host per line: 'host', 'host:N' or
                            'host slots=N'; '#' starts a comment
  -ppn N, --npernode N, --map-by ppr:N:node
                            N ranks on each host (ranks wrap around the
                            hosts when -n asks for more)
  --map-by slot|core        fill each host's slots before the next (default)
  --map-by node, -rr        one rank per host in turn
  --launcher-exec AGENT     start the other hosts' part of the job with
                            'AGENT HOST COMMAND' (also OXMPI_LAUNCHER and
                            --mca plm_rsh_agent AGENT); default: ssh -x
  --launcher ssh|rsh        which remote shell, without --launcher-exec
  --prefix DIR              mpirun is DIR/bin/mpirun on the other hosts
                            (default: this mpirun's own path)
  With -n omitted, the job has one rank per slot (or -ppn per host).
  The other hosts need the same programs at the same paths, and libucx
  (ranks on different hosts talk through UCX).

For the whole job:
  -genv VAR VALUE           set VAR for every rank
  --timeout SECONDS         kill the job after SECONDS (exit 124), after
                            a hang report: where each rank waits, the
                            wait-for graph and its cycles (also on
                            SIGQUIT to mpirun, the job going on);
                            also OXMPI_TIMEOUT
  --tag-output, -l          prefix each output line with [rank]
  --profile[=FILE]          print a profile of the MPI calls after the job
                            (rank 0 at MPI_Finalize: calls, time, bytes,
                            waiting, per-rank spread, heaviest pairs); with
                            FILE also as JSON there (also OXMPI_PROFILE=1
                            or OXMPI_PROFILE=FILE)
  --output-filename DIR     write each rank's output to
                            DIR/1/rank.R/stdout and stderr instead
  --bind-to core|hwthread|socket|numa|none
                            pin each rank to one CPU (core, hwthread: the
                            default), to the CPUs of its socket or NUMA node,
                            or not at all
  --report-bindings         print each rank's CPUs to stderr at start
  --oversubscribe           allow more ranks than the hosts' slots (on this
                            host alone, more ranks than CPUs always works)
  --allow-run-as-root       accepted (no effect)
  --mca KEY VALUE           accepted and ignored, with a warning (Open MPI's
                            parameters mean nothing here)
  --tunables                print OxMPI's tunables (OXMPI_* variables) and exit
  -V, --version             print the version and exit
  -h, --help                print this help and exit

Environment:
  OXMPI_TIMEOUT=SECONDS     as --timeout
  OXMPI_PROFILE=1|FILE      as --profile[=FILE]
  OXMPI_HANG_REPORT=SECONDS print the hang report once every rank has
                            waited in MPI for SECONDS (the job goes on)
  OXMPI_LAUNCHER=AGENT      as --launcher-exec
  OXMPI_*                   library tunables, passed to every rank as any
                            variable is (see --tunables)

Exit status: 0 when every rank exits 0; otherwise the first failing rank's
code (128+N for signal N, the MPI_Abort error code), 124 on --timeout,
2 for a command line error. A failure on any host ends the job on every
host; nothing of it is left running, nor its files in /dev/shm.
";

/// A command-line error: says what was wrong, points at --help, exit 2.
pub(crate) fn bad(what: &str) -> ! {
    eprintln!("mpirun: {what}\nmpirun: 'mpirun --help' lists the options");
    std::process::exit(2);
}

pub(crate) fn parse(args: Vec<String>) -> Opts {
    let mut o = Opts {
        apps: Vec::new(),
        env: Vec::new(),
        timeout: None,
        tag: false,
        bind: None,
        report_bindings: false,
        output_dir: None,
        hosts: Vec::new(),
        hostfile: None,
        ppn: None,
        map_by: MapBy::Slot,
        oversubscribe: false,
        launcher: std::env::var("OXMPI_LAUNCHER")
            .ok()
            .filter(|s| !s.is_empty()),
        prefix: None,
    };
    let mut cur = App {
        n: 1,
        n_given: false,
        env: Vec::new(),
        wdir: None,
        prog: Vec::new(),
    };
    let mut i = 0;
    let need = |i: usize, what: &str| -> String {
        args.get(i + 1)
            .cloned()
            .unwrap_or_else(|| bad(&format!("{} needs {what}", args[i])))
    };
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            ":" => {
                if cur.prog.is_empty() {
                    bad("a ':' with no program before it");
                }
                o.apps.push(std::mem::replace(
                    &mut cur,
                    App {
                        n: 1,
                        n_given: false,
                        env: Vec::new(),
                        wdir: None,
                        prog: Vec::new(),
                    },
                ));
                i += 1;
            }
            _ if !cur.prog.is_empty() => {
                // The program's own arguments, up to the next block.
                cur.prog.push(args[i].clone());
                i += 1;
            }
            "-n" | "-np" | "--n" | "--np" | "-c" => {
                let v = need(i, "a number of ranks");
                cur.n = match v.parse::<usize>() {
                    Ok(0) => bad(&format!("{a} 0: a job needs at least one rank")),
                    Ok(k) => k,
                    Err(_) => bad(&format!("{a} {v}: not a number of ranks")),
                };
                cur.n_given = true;
                i += 2;
            }
            "-x" => {
                let v = need(i, "VAR or VAR=VALUE");
                match v.split_once('=') {
                    Some((k, val)) => cur.env.push((k.into(), val.into())),
                    None => cur
                        .env
                        .push((v.clone(), std::env::var(&v).unwrap_or_default())),
                }
                i += 2;
            }
            "-genv" | "-env" => {
                let k = need(i, "VAR VALUE");
                let v = args
                    .get(i + 2)
                    .cloned()
                    .unwrap_or_else(|| bad(&format!("{a} {k} needs a value")));
                if a == "-genv" {
                    o.env.push((k, v));
                } else {
                    cur.env.push((k, v));
                }
                i += 3;
            }
            "-wdir" | "--wdir" | "-wd" | "--wd" => {
                cur.wdir = Some(need(i, "a directory"));
                i += 2;
            }
            "--timeout" | "-timeout" => {
                let v = need(i, "a number of seconds");
                o.timeout = Some(
                    v.parse()
                        .ok()
                        .filter(|t: &f64| *t > 0.0)
                        .unwrap_or_else(|| {
                            bad(&format!("{a} {v}: not a positive number of seconds"))
                        }),
                );
                i += 2;
            }
            "--tag-output" | "-l" | "-prepend-rank" => {
                o.tag = true;
                i += 1;
            }
            "--profile" | "-profile" => {
                // The caller's own OXMPI_PROFILE (a file, say) stays.
                if std::env::var("OXMPI_PROFILE").map_or(true, |v| v.trim().is_empty()) {
                    o.env.push(("OXMPI_PROFILE".into(), "1".into()));
                }
                i += 1;
            }
            p if p.starts_with("--profile=") => {
                let file = &p["--profile=".len()..];
                if file.is_empty() {
                    bad("--profile=: no file named");
                }
                // Ranks may run elsewhere (-wdir): the path is made absolute here.
                let path = std::path::Path::new(file);
                let abs = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    std::env::current_dir().unwrap_or_default().join(path)
                };
                o.env
                    .push(("OXMPI_PROFILE".into(), abs.to_string_lossy().into_owned()));
                i += 1;
            }
            "--output-filename" | "-output-filename" => {
                o.output_dir = Some(need(i, "a directory"));
                i += 2;
            }
            "--oversubscribe" | "-oversubscribe" => {
                o.oversubscribe = true;
                i += 1;
            }
            "--allow-run-as-root" => i += 1,
            "--host" | "-host" | "-H" | "-hosts" | "--hosts" => {
                let v = need(i, "a list of hosts");
                o.hosts.extend(
                    place::parse_host_list(&v).unwrap_or_else(|e| bad(&format!("{a} {v}: {e}"))),
                );
                i += 2;
            }
            "--hostfile" | "-hostfile" | "-f" | "--machinefile" | "-machinefile" => {
                o.hostfile = Some(need(i, "a file"));
                i += 2;
            }
            "-ppn" | "--ppn" | "-npernode" | "--npernode" => {
                let v = need(i, "a number of ranks per host");
                o.ppn = Some(positive(&v, || {
                    format!("{a} {v}: not a number of ranks per host")
                }));
                i += 2;
            }
            "--map-by" | "-map-by" => {
                let v = need(i, "slot, node or ppr:N:node");
                let l = v.to_ascii_lowercase();
                let l = l.split(':').collect::<Vec<_>>();
                match l.as_slice() {
                    ["slot" | "core" | "hwthread" | "socket" | "numa", ..] => {
                        o.map_by = MapBy::Slot
                    }
                    ["node", ..] => o.map_by = MapBy::Node,
                    ["ppr", k, "node", ..] => {
                        o.ppn = Some(positive(k, || {
                            format!("{a} {v}: '{k}' is not a number of ranks")
                        }))
                    }
                    _ => bad(&format!("{a} {v}: use slot, core, node or ppr:N:node")),
                }
                i += 2;
            }
            "-rr" | "--bynode" | "-bynode" => {
                o.map_by = MapBy::Node;
                i += 1;
            }
            "--byslot" | "-byslot" => {
                o.map_by = MapBy::Slot;
                i += 1;
            }
            "--launcher-exec" | "-launcher-exec" => {
                o.launcher = Some(need(i, "an agent program"));
                i += 2;
            }
            "--launcher" | "-launcher" | "-bootstrap" => {
                let v = need(i, "ssh or rsh");
                match v.as_str() {
                    "ssh" | "rsh" => {
                        if o.launcher.is_none() {
                            o.launcher = Some(v.clone());
                        }
                    }
                    _ => bad(&format!(
                        "{a} {v}: use ssh or rsh, or --launcher-exec AGENT"
                    )),
                }
                i += 2;
            }
            "--prefix" | "-prefix" => {
                o.prefix = Some(need(i, "a directory"));
                i += 2;
            }
            "--report-bindings" | "-report-bindings" => {
                o.report_bindings = true;
                i += 1;
            }
            "--bind-to" | "-bind-to" => {
                let v = need(i, "core, hwthread, socket, numa or none");
                o.bind = Some(Bind::parse(&v).unwrap_or_else(|| {
                    bad(&format!(
                        "--bind-to {v}: use core, hwthread, socket, numa or none"
                    ))
                }));
                i += 2;
            }
            "--mca" | "-mca" => {
                let k = need(i, "KEY VALUE");
                if args.get(i + 2).is_none() {
                    bad(&format!("{a} {k} needs a value"));
                }
                if k == "plm_rsh_agent" || k == "orte_rsh_agent" {
                    o.launcher = Some(args[i + 2].clone());
                    i += 3;
                    continue;
                }
                eprintln!("mpirun: warning: {a} {k} {} ignored (Open MPI parameters mean nothing to OxMPI; its tunables: mpirun --tunables)", args[i + 2]);
                i += 3;
            }
            "--tunables" => {
                oxmpi::config::print_table(&oxmpi::coll::select::tunable_lines());
                std::process::exit(0);
            }
            "-V" | "--version" => {
                println!("OxMPI mpirun {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "-h" | "--help" | "-help" => {
                print!("{HELP}");
                std::process::exit(0);
            }
            _ if a.starts_with('-') => bad(&format!("unknown option {a}")),
            _ => {
                cur.prog.push(args[i].clone());
                i += 1;
            }
        }
    }
    if cur.prog.is_empty() {
        bad(if o.apps.is_empty() {
            "no program to run"
        } else {
            "a ':' with no program after it"
        });
    }
    o.apps.push(cur);
    if let Ok(t) = std::env::var("OXMPI_TIMEOUT") {
        if o.timeout.is_none() {
            o.timeout = t.parse().ok();
        }
    }
    o
}

//! The command line: options, blocks (MPMD) and --help.

/// One program block of the command line (`:` separates them, MPMD): its
/// rank count, environment and working directory.
pub(crate) struct App {
    pub(crate) n: usize,
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
}

impl Opts {
    pub(crate) fn size(&self) -> usize {
        self.apps.iter().map(|a| a.n).sum()
    }
}

pub(crate) const HELP: &str = "\
Usage: mpirun [options] program [args...] [: [block options] program [args...]]...
       (also mpiexec)

Starts the ranks of an MPI job on this host and serves them PMI-1.

Ranks and programs (per block; blocks separated by ':' run as one job, MPMD,
ranks numbered across the blocks in order, MPI_APPNUM = the block's index):
  -n N, -np N, -c N         number of ranks of the block (default 1)
  -x VAR[=VALUE]            set VAR for the block's ranks (without a value:
                            this environment's value)
  -env VAR VALUE            the same, MPICH's spelling
  -wdir DIR, --wdir DIR     working directory of the block's ranks
                            (also -wd, --wd)

For the whole job:
  -genv VAR VALUE           set VAR for every rank
  --timeout SECONDS         kill the job after SECONDS (exit 124);
                            also OXMPI_TIMEOUT
  --tag-output, -l          prefix each output line with [rank]
  --output-filename DIR     write each rank's output to
                            DIR/1/rank.R/stdout and stderr instead
  --bind-to core|hwthread|socket|numa|none
                            pin each rank to one CPU (core, hwthread: the
                            default), to the CPUs of its socket or NUMA node,
                            or not at all
  --report-bindings         print each rank's CPUs to stderr at start
  --oversubscribe           accepted (more ranks than CPUs always works)
  --allow-run-as-root       accepted (no effect)
  --mca KEY VALUE           accepted and ignored, with a warning (Open MPI's
                            parameters mean nothing here)
  --tunables                print OxMPI's tunables (OXMPI_* variables) and exit
  -V, --version             print the version and exit
  -h, --help                print this help and exit

Environment:
  OXMPI_TIMEOUT=SECONDS     as --timeout
  OXMPI_*                   library tunables, passed to every rank as any
                            variable is (see --tunables)

Exit status: 0 when every rank exits 0; otherwise the first failing rank's
code (128+N for signal N, the MPI_Abort error code), 124 on --timeout,
2 for a command line error.
";

/// A command-line error: says what was wrong, points at --help, exit 2.
pub(crate) fn bad(what: &str) -> ! {
    eprintln!("mpirun: {what}\nmpirun: 'mpirun --help' lists the options");
    std::process::exit(2);
}

pub(crate) fn parse_args() -> Opts {
    parse(std::env::args().skip(1).collect())
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
    };
    let mut cur = App {
        n: 1,
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
            "--output-filename" | "-output-filename" => {
                o.output_dir = Some(need(i, "a directory"));
                i += 2;
            }
            "--oversubscribe" | "-oversubscribe" | "--allow-run-as-root" => i += 1,
            "--report-bindings" | "-report-bindings" => {
                o.report_bindings = true;
                i += 1;
            }
            "--bind-to" | "-bind-to" => {
                let v = need(i, "core, hwthread, socket, numa or none");
                o.bind = Some(match v.as_str() {
                    "none" => Bind::None,
                    "core" | "hwthread" | "cpu" => Bind::Cpu,
                    "socket" | "package" => Bind::Socket,
                    "numa" => Bind::Numa,
                    _ => bad(&format!(
                        "--bind-to {v}: use core, hwthread, socket, numa or none"
                    )),
                });
                i += 2;
            }
            "--mca" | "-mca" => {
                let k = need(i, "KEY VALUE");
                if args.get(i + 2).is_none() {
                    bad(&format!("{a} {k} needs a value"));
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

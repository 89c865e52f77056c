//! PPX benchmark: traces per second of the tau simulator served over PPX
//! (`simgen ppx-serve`, one server process for both clients), driven by
//! our client (`simgen::traces::remote::RemoteSimulator`, what `simgen
//! traces --ppx` and `trainer infer --ppx` use) against pyprob 1.5.0's
//! `RemoteModel` drawing prior traces from the same server in the same run
//! (Baydin et al., SC19, Sec. IV-A: the protocol Etalumis ran Sherpa
//! through); and the share of a trace's time the protocol costs, against
//! the same traces simulated in process.
//!
//! ```sh
//! bash python/setup-venv.sh && bash python/setup-pyprob-venv.sh   # pyprob's venv
//! cargo bench -p stagehand-simgen --bench ppx-bench
//! ```
//! `STAGEHAND_BENCH_REPS` (default 5), `STAGEHAND_BENCH_TRACES` (default
//! 2000 for our client; pyprob's draws a fifth as many).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bench_rows::Row;
use simgen::traces::generate::{run_prior, run_prior_of};
use simgen::traces::remote::RemoteSimulator;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");
const PYPROB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../python/.venv-pyprob/bin/python");

/// pyprob's client, timed after its first trace (the import and handshake
/// are not the protocol's cost).
const PEER: &str = r#"
import sys, time, pyprob
model = pyprob.RemoteModel(sys.argv[1])
model.get_trace()
n = int(sys.argv[2])
started = time.perf_counter()
for _ in range(n):
    model.get_trace()
print('traces/s', n / (time.perf_counter() - started))
model.close()
"#;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    assert!(
        Path::new(PYPROB).is_file(),
        "{PYPROB} is missing: bash python/setup-venv.sh && bash python/setup-pyprob-venv.sh"
    );
    let reps = bench_rows::repetitions(5);
    let traces = bench_rows::count("STAGEHAND_BENCH_TRACES", 2000);
    let peer_traces = (traces / 5).max(20);
    let mut server = Command::new(SIMGEN)
        .args(["ppx-serve", "--address", "tcp://127.0.0.1:*"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut banner = String::new();
    std::io::BufReader::new(server.stderr.take().unwrap()).read_line(&mut banner).unwrap();
    let address = banner.split_whitespace().last().unwrap().to_owned();
    let (mut ours, mut theirs, mut in_process) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let mut remote = RemoteSimulator::connect(&address, Duration::from_secs(60)).unwrap();
        let started = Instant::now();
        for i in 0..traces {
            run_prior_of(&mut |ex| remote.run(ex), rep as u64, i as u64, None).unwrap();
        }
        ours.push(traces as f64 / started.elapsed().as_secs_f64());
        drop(remote);
        let started = Instant::now();
        for i in 0..traces {
            run_prior(rep as u64, i as u64).unwrap();
        }
        in_process.push(traces as f64 / started.elapsed().as_secs_f64());
        let peer = Command::new(PYPROB).args(["-c", PEER, &address, &peer_traces.to_string()]).output().unwrap();
        assert!(peer.status.success(), "pyprob: {}", String::from_utf8_lossy(&peer.stderr));
        // pyprob prints its connection's messages on stdout too.
        let stdout = String::from_utf8_lossy(&peer.stdout);
        let rate: f64 = stdout.lines().find_map(|l| l.strip_prefix("traces/s ")).unwrap().trim().parse().unwrap();
        theirs.push(rate);
        println!(
            "rep {rep}: ours {:.0} traces/s, pyprob {:.0} traces/s, in process {:.0} traces/s",
            ours[rep], theirs[rep], in_process[rep]
        );
    }
    let _ = server.kill();
    let _ = server.wait();
    let (ours_rate, theirs_rate, local_rate) = (median(ours.clone()), median(theirs.clone()), median(in_process));
    let ratio = median(ours.iter().zip(&theirs).map(|(o, t)| o / t).collect());
    // The served run simulates exactly what the in-process run does; the
    // rest of a trace's time is the protocol (messages, sockets, both ends).
    let protocol_share = 1.0 - ours_rate / local_rate;
    println!("\n| tau over PPX | ours traces/s | pyprob traces/s | ratio | in process traces/s | protocol share |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {traces} and {peer_traces} traces | {ours_rate:.0} | {theirs_rate:.1} | {ratio:.1} | {local_rate:.0} | {:.0} % |",
        100.0 * protocol_share
    );
    println!("raw: ours {ours:?}, pyprob {theirs:?}");
    let rows = [
        Row::new(
            "client",
            format!("prior traces of the tau simulator served over PPX, our client: {ours_rate:.0} traces/s"),
        )
        .peer(format!("pyprob 1.5.0 RemoteModel, same server: {theirs_rate:.1} traces/s"))
        .ratio(format!("{ratio:.1}"))
        .target("≥ 5x pyprob", Some(ratio >= 5.0)),
        Row::new(
            "protocol-share",
            format!("share of an over-PPX trace's time outside the simulator: {:.0} %", 100.0 * protocol_share),
        )
        .peer(format!("the same traces in process: {local_rate:.0} traces/s")),
    ];
    bench_rows::record(
        "ppx-bench",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-simgen --bench ppx-bench"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

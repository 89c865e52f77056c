//! Open MPI 4.1's `mpirun` sometimes never exits after ranks that failed
//! together (each calling `MPI_Abort` at about the same moment) have all
//! exited: its ranks are zombies it never reaps, and the test waiting for
//! it hangs for good (measured: 1 run in 15-20 of a test whose three
//! askers all fail at once, with and without Stagehand's changes around
//! it). This waits for an `mpirun` as `Command::output` does, and ends one
//! found in that state: every child a zombie for a few seconds.

use std::io::Read;
use std::process::{Child, ExitStatus, Output};
use std::time::{Duration, Instant};

/// How long every rank may sit as a zombie before `mpirun` is taken to be
/// stuck (a healthy one reaps its ranks within milliseconds).
const STUCK_AFTER: Duration = Duration::from_secs(5);

/// Wait for `child` (an `mpirun` started with piped stdout and stderr) and
/// collect its output; one stuck after its ranks ended is killed, and its
/// output gets a line saying so on stderr.
pub fn wait_with_output(mut child: Child) -> std::io::Result<Output> {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let mut all_zombies_since: Option<Instant> = None;
    let mut killed = false;
    let status: ExitStatus = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if ranks_all_zombies(child.id()) {
            let since = *all_zombies_since.get_or_insert_with(Instant::now);
            if since.elapsed() > STUCK_AFTER && !killed {
                child.kill()?;
                killed = true;
            }
        } else {
            all_zombies_since = None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = stdout.join().unwrap_or_default();
    let mut stderr = stderr.join().unwrap_or_default();
    if killed {
        stderr.extend_from_slice(
            format!("e2e: mpirun did not exit {} s after all its ranks had; killed it\n", STUCK_AFTER.as_secs())
                .as_bytes(),
        );
    }
    Ok(Output { status, stdout, stderr })
}

/// Whether process `pid` has children and every one is a zombie.
fn ranks_all_zombies(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    let mut children = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            children.extend(list.split_whitespace().map(str::to_owned));
        }
    }
    !children.is_empty()
        && children.iter().all(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat"))
                .ok()
                .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
                .unwrap_or(false)
        })
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    /// A parent whose children have exited but which never reaps them, as
    /// the stuck `mpirun` (here `sleep`, exec'd by the shell that started
    /// the children), is killed rather than waited for.
    #[test]
    fn a_parent_that_never_reaps_its_exited_children_is_killed() {
        let child = Command::new("sh")
            .args(["-c", "sleep 0.1 & sleep 0.1 & echo started; exec sleep 600"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let out = super::wait_with_output(child).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        assert!(!out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
        assert!(String::from_utf8_lossy(&out.stderr).contains("did not exit 5 s after all its ranks had"));
    }
}

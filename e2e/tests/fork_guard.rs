//! Regression: a CI run failed because a test's trainers could not open
//! their HDF5 data ("unable to lock file, errno = 11"). A concurrent test
//! had started `mpirun` while the first was still writing that file, and
//! the child inherited the open descriptor and with it HDF5's exclusive
//! lock. `e2e::output` does not start a child while `e2e::writing` runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

#[test]
fn a_child_started_while_a_file_is_written_does_not_keep_it_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.h5");
    let (opened, is_open) = mpsc::channel();
    let writer = {
        let path = path.clone();
        thread::spawn(move || {
            e2e::writing(|| {
                let file = hdf5::File::create(&path).unwrap();
                opened.send(()).unwrap();
                thread::sleep(Duration::from_millis(300));
                drop(file);
            })
        })
    };
    is_open.recv().unwrap();
    // Asked for while the file is open; it must start only once it is closed.
    let child = thread::spawn(|| e2e::output(Command::new("sleep").arg("3")).unwrap());
    writer.join().unwrap();
    thread::sleep(Duration::from_millis(300));
    let read = hdf5::File::open(&path);
    assert!(read.is_ok(), "the file is still locked by the child: {:?}", read.err());
    assert!(child.join().unwrap().status.success());
}

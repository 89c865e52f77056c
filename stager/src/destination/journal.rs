//! The journal in a destination: which files are completely staged, so a
//! re-run after a crash or `kill -9` skips them. It lives in
//! `DEST/.stagehand/` with the temporary files of writes in progress, which
//! a new run removes before it starts.
//!
//! Each line is `{"path", "xxh3", "bytes", "ino", "ctime_ns"}`, appended and
//! fsynced only after the file was checked, renamed into place and made
//! durable (in batches: see [`Journal`]). Several
//! writers (the naive copy has one per rank) each append to their own
//! `journal*.jsonl`, so the journals of several runs hold several records of
//! one path, in no order a reader could trust (directory order, clocks).
//! A record therefore names the file it describes: the inode and change
//! time the placed file had right after its rename. A file is staged only
//! if some record matches the file the path holds now; a record of bytes
//! that were since replaced (by another run, or by hand) matches no file
//! and is ignored, whichever journal it sits in. Records without these
//! fields (journals of older versions) match nothing, so their files are
//! checked by staging them again.
//!
//! The journal is a cache of work done, never the only record of it: a line
//! that does not parse (a torn append, random bytes, a name cut inside a
//! UTF-8 character) is skipped with a warning naming the journal, and the
//! file it described is simply staged again. Nothing under the destination
//! is followed out of it: a state directory, temporary directory or journal
//! that is a symbolic link is an error.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use formats::checksum::Checksum;

/// Directory of Stagehand's bookkeeping inside a destination.
pub use formats::manifest::STATE_DIR;

/// One completed file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// Path relative to the destination.
    pub path: String,
    /// Its xxh3-64, as in the manifest.
    pub xxh3: Checksum,
    /// Which file on disk holds those bytes; absent in journals written
    /// before records named their file.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileIdentity>,
}

/// What tells one placed file from any later one at the same path: its
/// size, inode and change time (a rename into place makes a new inode, and
/// a write, truncation, `chmod` or `touch` moves the change time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileIdentity {
    /// Size in bytes.
    pub bytes: u64,
    /// Inode number.
    pub ino: u64,
    /// Change time (`st_ctime`) in nanoseconds since the epoch.
    pub ctime_ns: i64,
}

impl FileIdentity {
    /// The identity of `path` itself (a symbolic link is described, not
    /// followed: a link never counts as a staged file).
    pub fn of(path: &Path) -> io::Result<FileIdentity> {
        Self::from_metadata(&fs::symlink_metadata(path)?)
    }

    /// The identity of an open file: after a rename into place, the file
    /// this process wrote, whatever the path holds by then.
    pub fn of_open(file: &fs::File) -> io::Result<FileIdentity> {
        Self::from_metadata(&file.metadata()?)
    }

    fn from_metadata(meta: &fs::Metadata) -> io::Result<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() {
            // The caller names the path.
            return Err(io::Error::other("not a regular file"));
        }
        let ctime_ns = meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec());
        Ok(FileIdentity { bytes: meta.len(), ino: meta.ino(), ctime_ns })
    }
}

/// What the journals of a destination say is staged: every record of every
/// path, read from all journals.
#[derive(Debug, Default)]
pub struct Staged {
    records: HashMap<String, Vec<(Checksum, FileIdentity)>>,
}

impl Staged {
    /// Add `entry` (records without a file identity are dropped: they
    /// cannot say which bytes they describe).
    fn add(&mut self, entry: Entry) {
        if let Some(file) = entry.file {
            self.records.entry(entry.path).or_default().push((entry.xxh3, file));
        }
    }

    /// Whether `rel` under `dest` holds the bytes of checksum `xxh3`
    /// (`bytes` long) according to a record of the file it holds now.
    pub fn holds(&self, dest: &Path, rel: &str, xxh3: Checksum, bytes: u64) -> bool {
        let Some(records) = self.records.get(rel) else { return false };
        let Ok(now) = FileIdentity::of(&dest.join(rel)) else { return false };
        now.bytes == bytes && records.iter().rev().find(|(_, file)| *file == now).is_some_and(|(sum, _)| *sum == xxh3)
    }

    /// Number of paths with at least one usable record.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True if no path has a usable record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// The state directory of `dest`.
pub fn state_dir(dest: &Path) -> PathBuf {
    dest.join(STATE_DIR)
}

/// The directory for temporary files of writes in progress.
pub fn temp_dir(dest: &Path) -> PathBuf {
    state_dir(dest).join("tmp")
}

/// The temporary file of manifest file `f` in `temp_dir` while a rank
/// fills it: the one that read it, or the node's writer receiving it over
/// MPI, or in the naive copy the rank that copies it. Exactly one rank of a
/// node writes each of the node's files, so the name needs no rank.
pub fn part_path(temp_dir: &Path, f: usize) -> PathBuf {
    temp_dir.join(format!("{f}.part"))
}

/// An error unless `path` is absent or a real directory (not a link).
fn refuse_link(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(io::Error::other(format!(
            "{} is a symbolic link; Stagehand does not follow links out of the destination (remove it)",
            path.display()
        ))),
        Ok(meta) if !meta.is_dir() => Err(io::Error::other(format!("{} is not a directory", path.display()))),
        _ => Ok(()),
    }
}

/// Create `dir` (a directory of Stagehand's inside a destination) unless it
/// exists, refusing a symbolic link in its place.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    refuse_link(dir)?;
    match fs::create_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => refuse_link(dir),
        other => other,
    }
}

/// Create `dest` (which may be reached through links: it is the user's)
/// and its state directory, refusing a link in the latter's place.
pub fn create_state_dir(dest: &Path) -> io::Result<PathBuf> {
    fs::create_dir_all(dest).map_err(|e| named(dest, e))?;
    let dir = state_dir(dest);
    create_private_dir(&dir)?;
    Ok(dir)
}

/// Create the state directory and its temporary directory of `dest`,
/// refusing links in their place.
pub fn create_temp_dir(dest: &Path) -> io::Result<PathBuf> {
    create_state_dir(dest)?;
    let temp = temp_dir(dest);
    create_private_dir(&temp)?;
    Ok(temp)
}

/// The entries of one journal's bytes, and how many lines were skipped
/// because they do not parse.
pub fn parse(bytes: &[u8]) -> (Vec<Entry>, usize) {
    let (mut entries, mut skipped) = (Vec::new(), 0);
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)) {
        match serde_json::from_slice::<Entry>(line) {
            Ok(entry) => entries.push(entry),
            Err(_) => skipped += 1,
        }
    }
    (entries, skipped)
}

/// Every record of every journal of `dest`. Lines that do not parse are
/// skipped with a warning naming the journal (the files they describe are
/// staged again).
pub fn load(dest: &Path) -> io::Result<Staged> {
    let mut done = Staged::default();
    let dir = state_dir(dest);
    refuse_link(&dir)?;
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(done),
        Err(e) => return Err(e),
    };
    for item in entries {
        let path = item?.path();
        let is_journal = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("journal") && n.ends_with(".jsonl"));
        if !is_journal {
            continue;
        }
        let mut bytes = Vec::new();
        let mut file =
            OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path).map_err(|e| named(&path, e))?;
        file.read_to_end(&mut bytes).map_err(|e| named(&path, e))?;
        let (entries, skipped) = parse(&bytes);
        if skipped > 0 {
            tracing::warn!(
                "{}: skipped {skipped} unreadable line(s); the files they describe will be checked and staged again",
                path.display()
            );
        }
        for entry in entries {
            done.add(entry);
        }
    }
    Ok(done)
}

/// The error of an `O_NOFOLLOW` open of `path`: a link in its place is
/// said to be one (the kernel's ELOOP reads "too many levels of symbolic
/// links"), anything else gets the path.
pub fn explain_link(path: &Path, e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) => io::Error::other(format!(
            "{} is a symbolic link; Stagehand does not follow links out of the destination (remove it)",
            path.display()
        )),
        _ => named(path, e),
    }
}

/// `e` with `path` in its message.
fn named(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Remove temporary files left by an interrupted run.
pub fn clear_temp(dest: &Path) -> io::Result<()> {
    // Through a linked state directory this would remove a directory
    // outside the destination.
    refuse_link(&state_dir(dest))?;
    match fs::remove_dir_all(temp_dir(dest)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// A batch of placed files is recorded once this many are waiting...
const COMMIT_FILES: usize = 1024;
/// ...or this many bytes...
const COMMIT_BYTES: u64 = 1 << 30;
/// ...or once the oldest has waited this long.
const COMMIT_AFTER: Duration = Duration::from_secs(1);

/// An open journal that records completed files in batches (group commit).
///
/// A file is recorded only once its bytes are durable. Syncing each file
/// and then the journal costs two journal commits of the destination's
/// file system per file, which bounds a run of small files to a few
/// hundred files per second on a disk; so placed files wait in a batch, and
/// a commit makes the whole batch durable with one `syncfs` of the
/// destination's file system, then appends their records and syncs the
/// journal once. A crash before the journal's sync loses only records: the
/// files they describe are staged again by the next run, never trusted
/// without one. Shared by reference among a rank's threads.
pub struct Journal {
    path: PathBuf,
    /// The destination, opened to name its file system to `syncfs`.
    dest: fs::File,
    /// Held through a commit, so that batches are appended whole.
    file: Mutex<fs::File>,
    waiting: Mutex<Batch>,
}

/// Files placed but not yet recorded.
#[derive(Default)]
struct Batch {
    entries: Vec<Entry>,
    bytes: u64,
    since: Option<Instant>,
}

impl Journal {
    /// Open (creating) `DEST/.stagehand/<name>` for appending. A journal
    /// that does not end a line (an append cut short) gets a newline first,
    /// so the next entry starts a line of its own.
    pub fn open(dest: &Path, name: &str) -> io::Result<Journal> {
        let path = create_state_dir(dest)?.join(name);
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| explain_link(&path, e))?;
        let len = file.metadata()?.len();
        if len > 0 {
            let mut last = [0u8];
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut last, len - 1)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        let dest = fs::File::open(dest).map_err(|e| named(dest, e))?;
        Ok(Journal { path, dest, file: Mutex::new(file), waiting: Mutex::new(Batch::default()) })
    }

    /// Note a file checked and renamed into place; it is recorded by the
    /// commit of its batch, which this call makes when the batch is due.
    pub fn record(&self, entry: Entry) -> io::Result<()> {
        let due = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            waiting.bytes += entry.file.map_or(0, |f| f.bytes);
            waiting.entries.push(entry);
            let since = *waiting.since.get_or_insert_with(Instant::now);
            let due = waiting.entries.len() >= COMMIT_FILES
                || waiting.bytes >= COMMIT_BYTES
                || since.elapsed() >= COMMIT_AFTER;
            due.then(|| std::mem::take(&mut *waiting))
        };
        match due {
            Some(batch) => self.commit_batch(batch),
            None => Ok(()),
        }
    }

    /// Make every file noted so far durable and record it. Call before a
    /// run reports what it staged.
    pub fn commit(&self) -> io::Result<()> {
        let batch = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|p| p.into_inner()));
        self.commit_batch(batch)
    }

    fn commit_batch(&self, batch: Batch) -> io::Result<()> {
        if batch.entries.is_empty() {
            return Ok(());
        }
        let mut lines = Vec::with_capacity(batch.entries.len() * 128);
        for entry in &batch.entries {
            serde_json::to_writer(&mut lines, entry).map_err(io::Error::other)?;
            lines.push(b'\n');
        }
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        sync_file_system(&self.dest).map_err(|e| io::Error::new(e.kind(), format!("syncing the destination: {e}")))?;
        file.write_all(&lines)?;
        file.sync_data()
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `syncfs(2)` of the file system holding `file`: every file written there
/// reaches the disk (and, since Linux 5.8, a failed write-back is reported
/// here). The standard library has no wrapper.
#[allow(unsafe_code)]
fn sync_file_system(file: &fs::File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open for as long as `file` is borrowed.
    if unsafe { libc::syncfs(file.as_raw_fd()) } == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A record of a file that exists under `dest`: its identity as it is now.
    fn record(dest: &Path, path: &str, sum: u64) -> Entry {
        Entry { path: path.into(), xxh3: Checksum(sum), file: Some(FileIdentity::of(&dest.join(path)).unwrap()) }
    }

    fn commit_now(journal: &Journal, entry: Entry) {
        journal.record(entry).unwrap();
        journal.commit().unwrap();
    }

    /// Write `bytes` to `rel` under `dest` the way a run places a file: a
    /// new file renamed over the old one.
    fn place(dest: &Path, rel: &str, bytes: &[u8]) {
        let temp = dest.join(format!("{rel}.part"));
        std::fs::write(&temp, bytes).unwrap();
        std::fs::rename(&temp, dest.join(rel)).unwrap();
    }

    #[test]
    fn journal_round_trips_and_ignores_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), "c", b"cc");
        std::fs::create_dir(dir.path().join("a")).unwrap();
        place(dir.path(), "a/b", b"ab");
        let j = Journal::open(dir.path(), "journal.jsonl").unwrap();
        commit_now(&j, record(dir.path(), "a/b", 7));
        let other = Journal::open(dir.path(), "journal.r1.jsonl").unwrap();
        commit_now(&other, record(dir.path(), "c", 9));
        std::fs::OpenOptions::new().append(true).open(j.path()).unwrap().write_all(b"{\"path\": \"torn").unwrap();
        let done = load(dir.path()).unwrap();
        assert_eq!(done.len(), 2);
        assert!(done.holds(dir.path(), "a/b", Checksum(7), 2));
        assert!(done.holds(dir.path(), "c", Checksum(9), 2));
        assert!(!done.holds(dir.path(), "c", Checksum(8), 2), "another checksum");
        assert!(!done.holds(dir.path(), "c", Checksum(9), 3), "another size");
    }

    /// The regression of a hostile test: dataset A staged, then B (same
    /// name and size, other bytes) by a writer with another journal, then A
    /// again. Whatever order the journals are read in, the record that
    /// describes the file the path holds now (B's) decides, so A is staged
    /// again instead of being skipped over B's bytes.
    #[test]
    fn the_record_of_the_file_on_disk_wins_whatever_journal_holds_it() {
        for (first, second) in [("journal.r0.jsonl", "journal.r1.jsonl"), ("journal.r1.jsonl", "journal.r0.jsonl")] {
            let dir = tempfile::tempdir().unwrap();
            place(dir.path(), "x", b"AAAA");
            commit_now(&Journal::open(dir.path(), first).unwrap(), record(dir.path(), "x", 0xA));
            place(dir.path(), "x", b"BBBB");
            commit_now(&Journal::open(dir.path(), second).unwrap(), record(dir.path(), "x", 0xB));
            let done = load(dir.path()).unwrap();
            assert!(!done.holds(dir.path(), "x", Checksum(0xA), 4), "{first} then {second}: A's record won");
            assert!(done.holds(dir.path(), "x", Checksum(0xB), 4), "{first} then {second}");
        }
    }

    /// A file changed after it was journaled (rewritten in place, or
    /// replaced without a record, as a run killed between its rename and
    /// its append leaves it) matches no record.
    #[test]
    fn a_file_changed_after_its_record_is_not_staged() {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), "x", b"AAAA");
        commit_now(&Journal::open(dir.path(), "journal.jsonl").unwrap(), record(dir.path(), "x", 0xA));
        place(dir.path(), "x", b"BBBB");
        assert!(!load(dir.path()).unwrap().holds(dir.path(), "x", Checksum(0xA), 4), "replaced");

        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), "x", b"AAAA");
        commit_now(&Journal::open(dir.path(), "journal.jsonl").unwrap(), record(dir.path(), "x", 0xA));
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::OpenOptions::new().write(true).open(dir.path().join("x")).unwrap().write_all(b"B").unwrap();
        assert!(!load(dir.path()).unwrap().holds(dir.path(), "x", Checksum(0xA), 4), "rewritten in place");
    }

    /// Records of older journals (no file identity) vouch for nothing.
    #[test]
    fn records_without_a_file_identity_are_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), "x", b"AAAA");
        std::fs::create_dir(state_dir(dir.path())).unwrap();
        std::fs::write(state_dir(dir.path()).join("journal.jsonl"), "{\"path\":\"x\",\"xxh3\":\"000000000000000a\"}\n")
            .unwrap();
        let done = load(dir.path()).unwrap();
        assert!(!done.holds(dir.path(), "x", Checksum(0xA), 4));
        assert_eq!(parse(&std::fs::read(state_dir(dir.path()).join("journal.jsonl")).unwrap()).1, 0);
    }

    /// A line of random bytes, or one cut inside a multi-byte UTF-8 name,
    /// is skipped; the lines around it still count.
    #[test]
    fn unreadable_lines_are_skipped_and_the_rest_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), "first", b"1");
        place(dir.path(), "second", b"2");
        let j = Journal::open(dir.path(), "journal.jsonl").unwrap();
        commit_now(&j, record(dir.path(), "first", 1));
        let cut = "{\"path\": \"caf\u{e9}-\u{1f600}".as_bytes();
        let mut file = std::fs::OpenOptions::new().append(true).open(j.path()).unwrap();
        file.write_all(&cut[..cut.len() - 2]).unwrap();
        file.write_all(b"\n\xff\xfe\x00garbage\x80\n").unwrap();
        drop(file);
        let j = Journal::open(dir.path(), "journal.jsonl").unwrap();
        commit_now(&j, record(dir.path(), "second", 2));
        let done = load(dir.path()).unwrap();
        assert_eq!(done.len(), 2, "{done:?}");
        assert!(done.holds(dir.path(), "first", Checksum(1), 1) && done.holds(dir.path(), "second", Checksum(2), 1));
        assert_eq!(parse(&std::fs::read(j.path()).unwrap()).1, 2);
    }

    /// After a torn last line, the next append starts a new line instead of
    /// being glued onto the torn one (and lost with it).
    #[test]
    fn an_append_after_a_torn_line_is_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), "after", b"5");
        let j = Journal::open(dir.path(), "journal.jsonl").unwrap();
        std::fs::OpenOptions::new().append(true).open(j.path()).unwrap().write_all(b"{\"path\": \"tor").unwrap();
        drop(j);
        let j = Journal::open(dir.path(), "journal.jsonl").unwrap();
        commit_now(&j, record(dir.path(), "after", 5));
        let done = load(dir.path()).unwrap();
        assert!(done.holds(dir.path(), "after", Checksum(5), 1), "{done:?}");
    }

    /// A state directory, temporary directory or journal that is a link
    /// out of the destination is refused; nothing is written through it.
    #[test]
    fn links_out_of_the_destination_are_refused() {
        let (dest, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::os::unix::fs::symlink(outside.path(), state_dir(dest.path())).unwrap();
        for e in [
            Journal::open(dest.path(), "journal.jsonl").map(|_| ()).unwrap_err(),
            load(dest.path()).map(|_| ()).unwrap_err(),
            create_temp_dir(dest.path()).map(|_| ()).unwrap_err(),
        ] {
            assert!(e.to_string().contains("symbolic link"), "{e}");
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "something was written outside");

        let dest = tempfile::tempdir().unwrap();
        std::fs::create_dir(state_dir(dest.path())).unwrap();
        let target = outside.path().join("victim.txt");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, state_dir(dest.path()).join("journal.jsonl")).unwrap();
        let e = Journal::open(dest.path(), "journal.jsonl").map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        std::os::unix::fs::symlink(outside.path(), temp_dir(dest.path())).unwrap();
        assert!(create_temp_dir(dest.path()).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

    /// A placed file counts as staged only once its batch is committed
    /// (its bytes synced first): a run killed before the commit restages
    /// it. A full batch commits by itself.
    #[test]
    fn records_reach_the_journal_when_their_batch_commits() {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), "x", b"x");
        let j = Journal::open(dir.path(), "journal.jsonl").unwrap();
        j.record(record(dir.path(), "x", 1)).unwrap();
        assert!(!load(dir.path()).unwrap().holds(dir.path(), "x", Checksum(1), 1), "recorded before its commit");
        j.commit().unwrap();
        assert!(load(dir.path()).unwrap().holds(dir.path(), "x", Checksum(1), 1));

        for i in 0..COMMIT_FILES {
            place(dir.path(), &format!("f{i}"), b"f");
            j.record(record(dir.path(), &format!("f{i}"), 2)).unwrap();
        }
        let done = load(dir.path()).unwrap();
        assert_eq!(done.len(), COMMIT_FILES + 1, "a full batch was not committed");
    }

    #[test]
    fn missing_state_dir_means_nothing_done() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
        clear_temp(dir.path()).unwrap();
    }
}

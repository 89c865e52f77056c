//! One clear line instead of "signal 7": reading a mapped source file that
//! another process truncated raises SIGBUS (`--read-method mmap`). The
//! handler prints the message set up front and exits with status 1.

use std::sync::OnceLock;

static MESSAGE: OnceLock<Vec<u8>> = OnceLock::new();

/// Print `message` (one line) and exit with status 1 on SIGBUS. Only the
/// first call's message is kept.
#[allow(unsafe_code)]
pub fn exit_with_message_on_sigbus(message: &str) -> std::io::Result<()> {
    let _ = MESSAGE.set(format!("{message}\n").into_bytes());
    // SAFETY: `on_sigbus` only calls async-signal-safe functions (write,
    // _exit) and reads `MESSAGE`, which is fully set before the handler is
    // installed and never changed after.
    let installed = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut())
    };
    if installed == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

#[allow(unsafe_code)]
extern "C" fn on_sigbus(_: libc::c_int) {
    if let Some(message) = MESSAGE.get() {
        // SAFETY: write(2) of a buffer that lives for the whole program.
        unsafe { libc::write(2, message.as_ptr().cast(), message.len()) };
    }
    // SAFETY: _exit is async-signal-safe and never returns.
    unsafe { libc::_exit(1) }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// Run in a child process (selected by an environment variable): map a
    /// file, truncate it, touch the lost page.
    #[test]
    #[allow(unsafe_code)]
    fn truncated_map_exits_with_the_message() {
        if std::env::var_os("STAGER_SIGBUS_CHILD").is_some() {
            super::exit_with_message_on_sigbus("error: source shrank while mapped").unwrap();
            let file = tempfile::tempfile().unwrap();
            file.set_len(1 << 16).unwrap();
            // SAFETY: this child process is meant to fault on the map.
            let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
            file.set_len(0).unwrap();
            let byte = std::hint::black_box(map[1 << 15]);
            panic!("read {byte} past the end of a truncated file without SIGBUS");
        }
        let exe = std::env::current_exe().unwrap();
        let out = Command::new(exe)
            .args(["--exact", "sigbus::tests::truncated_map_exits_with_the_message", "--nocapture"])
            .env("STAGER_SIGBUS_CHILD", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("error: source shrank while mapped"), "{stderr}");
    }
}

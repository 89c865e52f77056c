//! The stager's journal: any bytes (torn lines, random bytes, names cut
//! inside a UTF-8 character) parse into entries plus a count of skipped
//! lines; the entries written back parse to the same entries.

use stager::destination::journal::parse;

/// One input, as the fuzz target `journal` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let (entries, skipped) = parse(input);
    let lines = input.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).count();
    assert_eq!(entries.len() + skipped, lines);
    let mut written = Vec::new();
    for entry in &entries {
        written.extend(serde_json::to_vec(entry).expect("an entry serialises"));
        written.push(b'\n');
    }
    assert_eq!(parse(&written), (entries, 0));
}

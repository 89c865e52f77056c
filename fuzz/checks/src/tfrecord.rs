//! TFRecord framing: the header scan, the verified record walk and the
//! index built from them, on raw bytes and on bytes whose CRCs were made
//! right (so the fuzzer reaches past the checksums). On well-framed input
//! the scan, the walk and the index must agree record for record.

use std::path::Path;

use formats::tfrecord::{RecordIndex, framed_len, masked_crc32c, records, scan_headers};

/// Frame `input` as records: each starts with a length byte, the rest of
/// the input is the data of the records.
fn frame(input: &[u8]) -> (Vec<u8>, Vec<&[u8]>) {
    let (mut out, mut datas, mut rest) = (Vec::new(), Vec::new(), input);
    while let Some((&len, tail)) = rest.split_first() {
        let data = &tail[..usize::from(len).min(tail.len())];
        rest = &tail[data.len()..];
        let len_bytes = (data.len() as u64).to_le_bytes();
        out.extend_from_slice(&len_bytes);
        out.extend_from_slice(&masked_crc32c(&len_bytes).to_le_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(&masked_crc32c(data).to_le_bytes());
        datas.push(data);
    }
    (out, datas)
}

/// One input, as the fuzz target `tfrecord` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let path = Path::new("<fuzz>");
    let Some((&mode, input)) = input.split_first() else { return };
    if mode % 2 == 0 {
        let spans = scan_headers(input, path);
        let walked: Vec<_> = records(input).collect();
        if let Ok(index) = RecordIndex::build(input, path) {
            let _ = index.check_covers(input.len() as u64, path);
        }
        // A walk that verified every record found the spans the scan found.
        if walked.iter().all(Result::is_ok)
            && let Ok(spans) = spans
        {
            assert_eq!(spans.len(), walked.len());
        }
        return;
    }
    let (bytes, datas) = frame(input);
    let spans = scan_headers(&bytes, path).expect("well-framed records scan");
    let walked: Vec<_> = records(&bytes).map(|r| r.expect("well-framed records verify")).collect();
    assert_eq!(spans.len(), datas.len());
    assert_eq!(walked.len(), datas.len());
    for ((record, data), (offset, framed)) in walked.iter().zip(&datas).zip(&spans) {
        assert_eq!(record.data, *data);
        assert_eq!(*framed, framed_len(data.len()) as u64);
        assert_eq!(record.offset, *offset);
    }
    let index = RecordIndex::build(&bytes, path).expect("well-framed records index");
    index.check_covers(bytes.len() as u64, path).expect("the index covers the records");
}

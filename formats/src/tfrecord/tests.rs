use std::path::Path;

use proptest::prelude::*;

use super::*;

fn framed(payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut writer = RecordWriter::new(Vec::new());
    for p in payloads {
        writer.write_record(p).unwrap();
    }
    writer.into_inner()
}

/// Offset of the record whose framed span contains byte `pos`.
fn record_start_containing(payloads: &[Vec<u8>], pos: usize) -> u64 {
    let mut start = 0usize;
    for p in payloads {
        let end = start + framed_len(p.len());
        if pos < end {
            return start as u64;
        }
        start = end;
    }
    unreachable!("position past the end")
}

fn error_offset(e: &TfRecordError) -> u64 {
    match e {
        TfRecordError::Truncated { offset, .. }
        | TfRecordError::LengthCrc { offset, .. }
        | TfRecordError::DataCrc { offset, .. } => *offset,
        other => panic!("unexpected error {other}"),
    }
}

#[test]
fn masked_crc_matches_tensorflow_reference_value() {
    // crc32c("123456789") = 0xE3069283 (RFC 3720 check value), masked as in
    // tensorflow/core/lib/hash/crc32c.h: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
    assert_eq!(masked_crc32c(b"123456789"), 0xc78a_b0e5);
}

#[test]
fn records_round_trip_with_offsets() {
    let payloads = vec![b"alpha".to_vec(), Vec::new(), vec![7u8; 1000]];
    let bytes = framed(&payloads);
    let got: Vec<_> = records(&bytes).collect::<Result<_, _>>().unwrap();
    assert_eq!(got.len(), 3);
    let mut offset = 0u64;
    for (record, payload) in got.iter().zip(&payloads) {
        assert_eq!(record.offset, offset);
        assert_eq!(record.data, &payload[..]);
        offset += framed_len(payload.len()) as u64;
    }
}

#[test]
fn empty_buffer_has_no_records() {
    assert_eq!(records(&[]).count(), 0);
}

#[test]
fn huge_length_field_is_truncation_not_overflow() {
    let len = u64::MAX.to_le_bytes();
    let mut bytes = len.to_vec();
    bytes.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    let err = records(&bytes).next().unwrap().unwrap_err();
    assert!(matches!(err, TfRecordError::Truncated { offset: 0, .. }), "{err}");
}

#[test]
fn reading_at_a_non_record_offset_is_an_error() {
    let bytes = framed(&[b"abc".to_vec(), b"defgh".to_vec()]);
    assert!(read_record_at(&bytes, 3, Path::new("x")).is_err());
    assert!(matches!(read_record_at(&bytes, 10_000, Path::new("x")), Err(TfRecordError::OffsetOutOfRange { .. })));
}

#[test]
fn file_round_trip_plain_and_gzip_with_index() {
    let dir = tempfile::tempdir().unwrap();
    let payloads: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 100 + i as usize]).collect();
    for gzip in [false, true] {
        let path = dir.path().join(format!("f{gzip}.tfrecord"));
        let mut w = TfRecordFileWriter::create(&path, gzip, true).unwrap();
        for p in &payloads {
            w.write_record(p).unwrap();
        }
        let written_index = w.finish().unwrap();
        let file = TfRecordFile::open(&path).unwrap();
        assert_eq!(file.is_gzip(), gzip);
        let got: Vec<Vec<u8>> = file.records().map(|r| r.unwrap().data.to_vec()).collect();
        assert_eq!(got, payloads);
        let loaded = RecordIndex::load(&index_path_for(&path)).unwrap();
        assert_eq!(loaded, written_index);
        assert_eq!(loaded, file.build_index().unwrap());
        loaded.check_covers(file.as_bytes().len() as u64, &path).unwrap();
        let third = file.record_at(loaded.offset(3).unwrap()).unwrap();
        assert_eq!(third.data, &payloads[3][..]);
    }
}

#[test]
fn dropped_writer_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("partial.tfrecord");
    let mut w = TfRecordFileWriter::create(&path, false, true).unwrap();
    w.write_record(b"half").unwrap();
    drop(w);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn malformed_index_names_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.idx");
    std::fs::write(&path, "0 20\nfoo bar\n").unwrap();
    let err = RecordIndex::load(&path).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn index_that_does_not_tile_the_stream_is_rejected() {
    let bytes = framed(&[b"abc".to_vec(), b"de".to_vec()]);
    let mut index = RecordIndex::build(&bytes, Path::new("f")).unwrap();
    index.check_covers(bytes.len() as u64, Path::new("f")).unwrap();
    index.push(999, 3);
    assert!(index.check_covers(bytes.len() as u64, Path::new("f")).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any single bit flipped anywhere in a file is reported at the offset of
    /// the record it hit; the records before it are still returned intact.
    #[test]
    fn any_single_bit_flip_is_an_error_at_the_right_offset(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 1..6),
        bit_seed in any::<u64>(),
    ) {
        let clean = framed(&payloads);
        let bit = (bit_seed % (clean.len() as u64 * 8)) as usize;
        let mut bytes = clean.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        let expected = record_start_containing(&payloads, bit / 8);
        let mut ok_before = 0u64;
        let mut error = None;
        for item in records_of(&bytes, Path::new("flip.tfrecord")) {
            match item {
                Ok(record) => {
                    prop_assert!(record.offset < expected, "corrupt record at {} accepted", record.offset);
                    ok_before += 1;
                }
                Err(e) => { error = Some(e); break; }
            }
        }
        let error = error.expect("a flipped bit went unnoticed");
        prop_assert_eq!(error_offset(&error), expected);
        prop_assert!(error.to_string().contains("flip.tfrecord"));
        let index_of_hit = payloads.iter().scan(0u64, |o, p| { let s = *o; *o += framed_len(p.len()) as u64; Some(s) })
            .position(|s| s == expected).unwrap() as u64;
        prop_assert_eq!(ok_before, index_of_hit);
    }

    /// Cutting a file anywhere inside a record is reported, at that record.
    #[test]
    fn truncation_is_an_error_at_the_cut_record(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 1..6),
        cut_seed in any::<u64>(),
    ) {
        let clean = framed(&payloads);
        let cut = (cut_seed % clean.len() as u64) as usize;
        let bytes = &clean[..cut];
        let boundary = payloads.iter().scan(0usize, |o, p| { *o += framed_len(p.len()); Some(*o) }).any(|e| e == cut);
        let result: Result<Vec<_>, _> = records(bytes).collect();
        if cut == 0 || boundary {
            prop_assert!(result.is_ok());
        } else {
            let err = result.unwrap_err();
            prop_assert!(matches!(err, TfRecordError::Truncated { .. }), "{}", err);
            prop_assert_eq!(error_offset(&err), record_start_containing(&payloads, cut));
        }
    }
}

//! Records of TFRecord files as samples.

use std::path::Path;

use formats::example::Example;
use formats::tfrecord::TfRecordFile;

use super::RecordSource;
use super::{in_range, records_error};
use crate::dataset::DatasetError;

/// Every record of a list of TFRecord files, in file order: the record's
/// payload (its CRC checked), or with a feature name the bytes of that
/// feature of the record's `tf.train.Example` (DLIO writes `image`).
pub struct TfRecords {
    files: Vec<TfRecordFile>,
    /// (file, offset of the record's header), one per sample.
    records: Vec<(usize, u64)>,
    feature: Option<String>,
}

impl TfRecords {
    /// Open `paths`, each mapped (GZIP files read into memory), and index
    /// their records: from the sidecar index where one covers the file,
    /// else by walking the record headers once. The records of the file
    /// are read whole; with `feature`, that feature's bytes.
    pub fn open(paths: &[impl AsRef<Path>], feature: Option<&str>) -> Result<TfRecords, DatasetError> {
        let (files, records) = crate::dataset::open_indexed(paths)?;
        Ok(TfRecords { files, records, feature: feature.map(str::to_owned) })
    }
}

impl RecordSource for TfRecords {
    fn samples(&self) -> usize {
        self.records.len()
    }
    fn place(&self, index: usize) -> String {
        match self.records.get(index) {
            Some(&(file, offset)) => {
                format!("sample {index} ({}, record at byte offset {offset})", self.files[file].path().display())
            }
            None => format!("sample {index}"),
        }
    }
    fn append(&self, index: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError> {
        let &(file, offset) = in_range(&self.records, index)?;
        let file = &self.files[file];
        let record = file.record_at(offset)?;
        match &self.feature {
            None => out.extend_from_slice(record.data),
            Some(name) => {
                let example = Example::decode_bytes(record.data)
                    .map_err(|e| records_error(file.path(), format!("record at byte offset {offset}: {e}")))?;
                let values = example
                    .bytes(name)
                    .map_err(|e| records_error(file.path(), format!("record at byte offset {offset}: {e}")))?;
                let [value] = values else {
                    return Err(records_error(
                        file.path(),
                        format!(
                            "record at byte offset {offset}: feature {name:?} holds {} byte strings, not one",
                            values.len()
                        ),
                    ));
                };
                out.extend_from_slice(value);
            }
        }
        Ok(record.framed_len())
    }
}

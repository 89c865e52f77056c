//! TensorBoard event files: a TFRecord stream of `tensorflow.Event`
//! protos (tensorflow/core/util/event.proto, with `Summary` from
//! tensorflow/core/framework/summary.proto) as hand-written `prost`
//! messages, so no `protoc` runs at build time. The first event names the
//! file's version (`brain.Event:2`, what TensorFlow's own writer puts
//! first); each later one holds scalars at a step. Scalars are
//! `simple_value`s, which TensorBoard's scalar dashboard and its
//! `EventAccumulator` read as they read TensorFlow's `tf.summary.scalar`
//! in TF1 form. TensorBoard finds files whose name contains `tfevents`.
//!
//! ```
//! use formats::tensorboard::{Event, EventWriter};
//! use formats::tfrecord;
//!
//! let mut writer = EventWriter::new(Vec::new(), 1.0e9).unwrap();
//! writer.scalars(3, 1.0e9 + 2.0, &[("train/loss", 0.25)]).unwrap();
//! let bytes = writer.into_inner();
//! let records: Vec<_> = tfrecord::records(&bytes).map(|r| r.unwrap()).collect();
//! assert_eq!(records.len(), 2); // the file version, then the scalar
//! assert_eq!(Event::decode_record(records[1].data).unwrap().step, 3);
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use prost::Message;

use crate::tfrecord::RecordWriter;

/// The version string TensorBoard expects in a file's first event.
pub const FILE_VERSION: &str = "brain.Event:2";

/// One event.
#[derive(Clone, PartialEq, Message)]
pub struct Event {
    /// Seconds since the Unix epoch.
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    /// The training step.
    #[prost(int64, tag = "2")]
    pub step: i64,
    /// What the event holds.
    #[prost(oneof = "What", tags = "3, 5")]
    pub what: Option<What>,
}

/// What an event holds (the `what` oneof; only the kinds written here).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum What {
    /// The file's version, in its first event.
    #[prost(string, tag = "3")]
    FileVersion(String),
    /// Values at the event's step.
    #[prost(message, tag = "5")]
    Summary(Summary),
}

/// Values at a step.
#[derive(Clone, PartialEq, Message)]
pub struct Summary {
    /// The values.
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<SummaryValue>,
}

/// One named value (`Summary.Value`).
#[derive(Clone, PartialEq, Message)]
pub struct SummaryValue {
    /// The name TensorBoard shows (`train/loss`).
    #[prost(string, tag = "1")]
    pub tag: String,
    /// The value: a oneof, so a scalar of 0.0 is still written (a plain
    /// proto3 field at its default would be left out, and read as absent).
    #[prost(oneof = "Value", tags = "2")]
    pub value: Option<Value>,
}

/// A value's kind (only scalars are written here).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    /// A scalar.
    #[prost(float, tag = "2")]
    SimpleValue(f32),
}

impl Event {
    /// Decode one record's payload.
    pub fn decode_record(data: &[u8]) -> Result<Event, prost::DecodeError> {
        Event::decode(data)
    }
}

/// Writes events onto any writer, the file-version event first.
#[derive(Debug)]
pub struct EventWriter<W: Write> {
    records: RecordWriter<W>,
}

impl<W: Write> EventWriter<W> {
    /// Start an event stream on `inner`, made at `wall_time`.
    pub fn new(inner: W, wall_time: f64) -> io::Result<Self> {
        let mut writer = EventWriter { records: RecordWriter::new(inner) };
        writer.write(&Event { wall_time, step: 0, what: Some(What::FileVersion(FILE_VERSION.to_owned())) })?;
        Ok(writer)
    }

    /// One event holding `values` (tag, value) at `step`.
    pub fn scalars(&mut self, step: u64, wall_time: f64, values: &[(&str, f32)]) -> io::Result<()> {
        let value = values
            .iter()
            .map(|&(tag, v)| SummaryValue { tag: tag.to_owned(), value: Some(Value::SimpleValue(v)) })
            .collect();
        let step = i64::try_from(step).map_err(|_| io::Error::other(format!("step {step} beyond int64")))?;
        self.write(&Event { wall_time, step, what: Some(What::Summary(Summary { value })) })
    }

    fn write(&mut self, event: &Event) -> io::Result<()> {
        self.records.write_record(&event.encode_to_vec()).map(|_| ())
    }

    /// Give back the writer.
    pub fn into_inner(self) -> W {
        self.records.into_inner()
    }

    /// The writer, to flush it.
    pub fn get_mut(&mut self) -> &mut W {
        self.records.get_mut()
    }
}

/// The name of a new event file in a log directory: TensorBoard reads
/// files named `events.out.tfevents.*`; the time, host and process keep
/// runs that share a directory apart.
pub fn event_file_name(wall_time: f64, host: &str) -> String {
    format!("events.out.tfevents.{}.{host}.{}.stagehand", wall_time as u64, std::process::id())
}

/// An event file in `dir` (created if missing), flushed after each write
/// so TensorBoard sees a run while it trains.
#[derive(Debug)]
pub struct EventFile {
    writer: EventWriter<BufWriter<File>>,
    path: PathBuf,
}

impl EventFile {
    /// A new event file in `dir`, made at `wall_time` on this host.
    pub fn create(dir: &Path, wall_time: f64) -> io::Result<EventFile> {
        std::fs::create_dir_all(dir)?;
        let host = rustix::system::uname().nodename().to_string_lossy().into_owned();
        let path = dir.join(event_file_name(wall_time, &host));
        let file = File::options().write(true).create_new(true).open(&path)?;
        let mut writer = EventWriter::new(BufWriter::new(file), wall_time)?;
        writer.get_mut().flush()?;
        Ok(EventFile { writer, path })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write `values` at `step` and flush.
    pub fn scalars(&mut self, step: u64, wall_time: f64, values: &[(&str, f32)]) -> io::Result<()> {
        self.writer.scalars(step, wall_time, values)?;
        self.writer.get_mut().flush()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::tfrecord;

    #[test]
    fn a_zero_scalar_is_written_and_decodes_with_its_tag_and_step() {
        let mut writer = EventWriter::new(Vec::new(), 5.5).unwrap();
        writer.scalars(7, 6.0, &[("a", 0.0), ("b", -1.5)]).unwrap();
        let bytes = writer.into_inner();
        let events: Vec<Event> =
            tfrecord::records(&bytes).map(|r| Event::decode_record(r.unwrap().data).unwrap()).collect();
        assert_eq!(events[0].what, Some(What::FileVersion(FILE_VERSION.to_owned())));
        assert_eq!(events[0].wall_time, 5.5);
        let Some(What::Summary(summary)) = &events[1].what else { panic!("{:?}", events[1]) };
        assert_eq!(events[1].step, 7);
        let values: Vec<(&str, Option<Value>)> =
            summary.value.iter().map(|v| (v.tag.as_str(), v.value.clone())).collect();
        assert_eq!(values, vec![("a", Some(Value::SimpleValue(0.0))), ("b", Some(Value::SimpleValue(-1.5)))]);
    }

    /// The bytes of a scalar event as protobuf lays them out: field 1
    /// (double), 2 (varint), 5 (message) holding field 1 (message) holding
    /// tag (1, string) and simple_value (2, float).
    #[test]
    fn a_scalar_event_has_the_wire_layout_of_tensorflows() {
        let mut writer = EventWriter::new(Vec::new(), 0.0).unwrap();
        writer.scalars(1, 0.0, &[("x", 1.0)]).unwrap();
        let bytes = writer.into_inner();
        let record = tfrecord::records(&bytes).nth(1).unwrap().unwrap();
        let value = [0x0a, 0x01, b'x', 0x15, 0x00, 0x00, 0x80, 0x3f];
        let summary = [&[0x0a, value.len() as u8][..], &value].concat();
        // wall_time 0.0 is left out (proto3 default); step 1; summary.
        let event = [&[0x10, 0x01, 0x2a, summary.len() as u8][..], &summary].concat();
        assert_eq!(record.data, &event[..]);
    }

    #[test]
    fn an_event_file_is_named_for_tensorboard_and_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = EventFile::create(dir.path(), 1.7e9).unwrap();
        file.scalars(1, 1.7e9, &[("x", 2.0)]).unwrap();
        let name = file.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with("events.out.tfevents.1700000000."), "{name}");
        let bytes = std::fs::read(file.path()).unwrap();
        assert_eq!(tfrecord::records(&bytes).count(), 2, "flushed after each write");
        assert!(EventFile::create(dir.path(), 1.7e9).is_err(), "the same name is not overwritten");
    }
}

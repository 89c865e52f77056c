//! Collision-event images of HEP-CNN files ([`formats::jets`]), many
//! events per HDF5 file: an event's image is read at its byte offset in
//! the contiguous `data` (no libhdf5 call, so workers read in parallel);
//! labels, weights and selection decisions are read once at open.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use formats::jets::{EventFile, EventShape, read_event_file};

use crate::dataset::{Dataset, DatasetError};

/// Values in one event's target: label, weight, cut-based decision.
pub const TARGET_LEN: usize = 3;

struct OpenFile {
    path: PathBuf,
    file: File,
    events: EventFile,
}

/// The events of a list of HEP-CNN files, in file order. An event's input
/// is its image (C, H, W); its target is `[label, weight, psr]`.
pub struct JetEvents {
    files: Vec<OpenFile>,
    shape: EventShape,
    /// (file, event), one per sample.
    samples: Vec<(usize, usize)>,
}

impl JetEvents {
    /// Open `paths`, each checked: images of one shape across the files,
    /// labels 0 or 1, the file as long as its datasets.
    pub fn open(paths: &[impl AsRef<Path>]) -> Result<JetEvents, DatasetError> {
        let mut files: Vec<OpenFile> = Vec::with_capacity(paths.len());
        let mut samples = Vec::new();
        for path in paths {
            let path = path.as_ref();
            let events = read_event_file(path).map_err(DatasetError::Climate)?;
            if let Some(first) = files.first()
                && first.events.shape != events.shape
            {
                let (a, b) = (first.events.shape, events.shape);
                return Err(DatasetError::Shape {
                    path: path.to_owned(),
                    key: 0,
                    reason: format!(
                        "images of {}×{}×{}, where {} has {}×{}×{}",
                        b.channels,
                        b.height,
                        b.width,
                        first.path.display(),
                        a.channels,
                        a.height,
                        a.width
                    ),
                });
            }
            if let Some(event) = events.labels.iter().position(|&l| l != 0 && l != 1) {
                return Err(DatasetError::Shape {
                    path: path.to_owned(),
                    key: event as u64,
                    reason: format!("label {} is neither 0 (background) nor 1 (signal)", events.labels[event]),
                });
            }
            let io = |source| DatasetError::Io { path: path.to_owned(), source };
            let file = formats::regular::open_regular(path).map_err(io)?;
            let len = file.metadata().map_err(io)?.len();
            if events.data.offset + events.data.len > len {
                return Err(DatasetError::Records {
                    path: path.to_owned(),
                    reason: format!("dataset data runs past the end of the file ({len} bytes)"),
                });
            }
            samples.extend((0..events.events()).map(|event| (files.len(), event)));
            files.push(OpenFile { path: path.to_owned(), file, events });
        }
        let shape = match files.first() {
            Some(f) => f.events.shape,
            None => EventShape { channels: 0, height: 0, width: 0 },
        };
        Ok(JetEvents { files, shape, samples })
    }

    /// One image's shape (all zero when no file was given).
    pub fn shape(&self) -> EventShape {
        self.shape
    }

    /// The label of every event, in sample order.
    pub fn labels(&self) -> impl Iterator<Item = i32> + '_ {
        self.samples.iter().map(|&(file, event)| self.files[file].events.labels[event])
    }
}

impl Dataset for JetEvents {
    fn len(&self) -> usize {
        self.samples.len()
    }

    fn x_len(&self) -> usize {
        self.shape.values()
    }

    fn y_len(&self) -> usize {
        TARGET_LEN
    }

    fn locate(&self, index: usize) -> String {
        match self.samples.get(index) {
            Some(&(file, event)) => format!("sample {index} ({}, event {event})", self.files[file].path.display()),
            None => format!("sample {index}"),
        }
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let &(file, event) =
            self.samples.get(index).ok_or(DatasetError::OutOfRange { index, len: self.samples.len() })?;
        let open = &self.files[file];
        let bytes = self.shape.values() * 4;
        let offset = open.events.data.offset + (event * bytes) as u64;
        let image = &mut x[..self.shape.values()];
        // The file's floats are little-endian; read them straight into the
        // caller's buffer and swap in place only on a big-endian host.
        open.file
            .read_exact_at(bytemuck::cast_slice_mut(image), offset)
            .map_err(|source| DatasetError::Io { path: open.path.clone(), source })?;
        if cfg!(target_endian = "big") {
            for v in image.iter_mut() {
                *v = f32::from_bits(u32::from_le(v.to_bits()));
            }
        }
        y[0] = open.events.labels[event] as f32;
        y[1] = open.events.weights[event];
        y[2] = open.events.psr[event];
        Ok(bytes as u64)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use formats::jets::{Events, write_events};

    use super::*;

    const SHAPE: EventShape = EventShape { channels: 3, height: 4, width: 4 };

    fn write(path: &Path, n: usize, labels: &[i32]) {
        let data: Vec<f32> = (0..n * SHAPE.values()).map(|i| i as f32).collect();
        let (weights, psr) = (vec![2.0; n], vec![1.0; n]);
        write_events(path, SHAPE, Events { data: &data, labels, weights: &weights, psr: &psr }).unwrap();
    }

    #[test]
    fn events_of_several_files_read_in_order_with_label_weight_and_selection() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.h5"), dir.path().join("b.h5"));
        write(&a, 2, &[0, 1]);
        write(&b, 3, &[1, 1, 0]);
        let events = JetEvents::open(&[&a, &b]).unwrap();
        assert_eq!((events.len(), events.x_len(), events.y_len()), (5, 48, 3));
        assert_eq!(events.labels().collect::<Vec<_>>(), [0, 1, 1, 1, 0]);
        let (mut x, mut y) = (vec![0f32; 48], vec![0f32; 3]);
        events.read_into(3, &mut x, &mut y).unwrap();
        assert_eq!((x[0], x[47]), (48.0, 95.0), "event 1 of b.h5");
        assert_eq!(y, [1.0, 2.0, 1.0]);
        assert!(events.locate(3).contains("b.h5, event 1"), "{}", events.locate(3));
    }

    #[test]
    fn a_label_other_than_0_or_1_is_refused_at_open_naming_the_file_and_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.h5");
        write(&path, 3, &[0, 1, 2]);
        let error = JetEvents::open(&[&path]).err().unwrap().to_string();
        assert!(error.contains("bad.h5") && error.contains("sample 2") && error.contains("label 2"), "{error}");
    }

    #[test]
    fn files_of_different_image_shapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.h5"), dir.path().join("b.h5"));
        write(&a, 1, &[0]);
        let other = EventShape { height: 8, ..SHAPE };
        let data = vec![0f32; other.values()];
        write_events(&b, other, Events { data: &data, labels: &[1], weights: &[1.0], psr: &[0.0] }).unwrap();
        let error = JetEvents::open(&[&a, &b]).err().unwrap().to_string();
        assert!(error.contains("3×8×4") && error.contains("a.h5 has 3×4×4"), "{error}");
    }
}

//! Writes one epoch of a rank's batches as the Rust loader makes them, for
//! the Python package's tests to compare with its own batches byte for
//! byte: `x` then `y` of every batch, as f32 little-endian, to `OUT.bin`,
//! and every batch's sample indices as JSON lines to `OUT.json`.
//!
//! `cargo run --example dump_batches -- DIR OUT BATCH SEED RANK WORLD EPOCH WORKERS`
//! (the dataset directory holds a manifest; the shuffling sampler pads).

use std::io::Write;
use std::path::PathBuf;

use formats::manifest::{MANIFEST_FILE, Manifest};
use loader::catalog;
use loader::dataset::CosmoTransform;
use loader::pipeline::{Loader, LoaderConfig};
use loader::sampler::{DistributedSampler, Remainder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, out, batch, seed, rank, world, epoch, workers] = args.as_slice() else {
        return Err("usage: dump_batches DIR OUT BATCH SEED RANK WORLD EPOCH WORKERS".into());
    };
    let dir = PathBuf::from(dir);
    let manifest = Manifest::load(&dir.join(MANIFEST_FILE))?;
    let opened = catalog::from_manifest(&dir, &manifest, None, CosmoTransform::Log1p, None)?;
    let sampler = DistributedSampler {
        len: opened.dataset.len(),
        world: world.parse()?,
        rank: rank.parse()?,
        seed: seed.parse()?,
        shuffle: true,
        remainder: Remainder::Pad,
    };
    let config = LoaderConfig {
        batch: batch.parse()?,
        workers: workers.parse()?,
        prefetch: 2,
        skip_corrupt: false,
        check_finite: false,
        drop_last: false,
    };
    let order = sampler.indices(epoch.parse()?);
    let loader = Loader::resume_with_buffers(opened.dataset, order, config, 0, Default::default());
    let mut values = std::io::BufWriter::new(std::fs::File::create(format!("{out}.bin"))?);
    let mut indices = std::io::BufWriter::new(std::fs::File::create(format!("{out}.json"))?);
    for batch in loader {
        let batch = batch?;
        for v in batch.x.iter().chain(&batch.y) {
            values.write_all(&v.to_le_bytes())?;
        }
        writeln!(indices, "{}", serde_json::to_string(&batch.indices)?)?;
    }
    values.flush()?;
    indices.flush()?;
    Ok(())
}

//! The trace store of Etalumis-style simulator traces: an address dictionary
//! (address string <-> id), and traces kept in trace-type order (the type of a
//! trace is its sequence of controlled address ids), so that a bucketed
//! sampler reading consecutive traces reads them sequentially.
//!
//! The writer appends each encoded trace to a staging file in the store's
//! temporary directory and keeps only its type, offset and length in
//! memory (16 bytes a trace); `finish` reads them back type by type and
//! appends them to the LMDB database in that order: an external sort with
//! one sequential write and one LMDB write per trace, whose memory does not
//! grow with the traces' bytes. Types are stored most frequent first (ties
//! by first arrival), so the type table reads as the frequency table of the
//! store. Several stores of one dataset can share one address dictionary
//! ([`finish_with_dictionary`](TraceStoreWriter::finish_with_dictionary)),
//! so an address id means the same in each.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use heed::byteorder::BigEndian;
use heed::types::{Bytes, Str, U32, U64};
use heed::{Database, Env, PutFlags};

use super::trace_codec::{self, Trace};
use super::{
    INITIAL_MAP_SIZE, LmdbError, fresh_temp_dir, grow_map, io_error, is_map_full, lmdb_error, open_env_in,
    open_read_only,
};

const ADDRESSES: &str = "addresses";
const TRACES: &str = "traces";
const TYPES: &str = "trace_types";
const MAX_DBS: u32 = 8;

/// One trace type: its controlled addresses and where its traces lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceType {
    /// Controlled address ids, in order.
    pub addresses: Vec<u32>,
    /// Index of its first trace.
    pub first: u64,
    /// Number of its traces.
    pub count: u64,
}

fn encode_type(t: &TraceType) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + 4 * t.addresses.len());
    out.extend_from_slice(&t.first.to_le_bytes());
    out.extend_from_slice(&t.count.to_le_bytes());
    out.extend_from_slice(&(t.addresses.len() as u32).to_le_bytes());
    for a in &t.addresses {
        out.extend_from_slice(&a.to_le_bytes());
    }
    out
}

fn decode_type(bytes: &[u8]) -> Option<TraceType> {
    let u64_at = |i: usize| bytes.get(i..).and_then(<[u8]>::first_chunk).map(|b| u64::from_le_bytes(*b));
    let u32_at = |i: usize| bytes.get(i..).and_then(<[u8]>::first_chunk).map(|b| u32::from_le_bytes(*b));
    let n = u32_at(16)? as usize;
    if bytes.len() != 20 + 4 * n {
        return None;
    }
    let addresses = (0..n).map(|i| u32_at(20 + 4 * i)).collect::<Option<_>>()?;
    Some(TraceType { first: u64_at(0)?, count: u64_at(8)?, addresses })
}

/// Builds a trace store; visible under its final name only after `finish`.
pub struct TraceStoreWriter {
    path: PathBuf,
    temp: PathBuf,
    staging_path: PathBuf,
    staging: BufWriter<File>,
    staged_bytes: u64,
    staged: Vec<Staged>,
    addresses: HashMap<String, u32>,
    types: HashMap<Vec<u32>, u32>,
    type_list: Vec<Vec<u32>>,
    type_counts: Vec<u64>,
    encoded: Vec<u8>,
    cleanup: TempDirs,
}

/// Where a staged trace lies in the staging file.
struct Staged {
    type_id: u32,
    len: u32,
    offset: u64,
}

/// A writer's temporary directory, removed when it is dropped before
/// `finish` succeeds (an error, a full disk, a panic): no half-written
/// store is left behind.
struct TempDirs {
    dir: PathBuf,
    armed: bool,
}

impl Drop for TempDirs {
    fn drop(&mut self) {
        if self.armed {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Staging file name inside the temporary directory.
const STAGING_FILE: &str = "staging.traces";
/// Bytes of traces per LMDB write transaction in `finish`.
const CHUNK_BYTES: usize = 64 << 20;

impl TraceStoreWriter {
    /// Start a store at `path` (a directory).
    pub fn create(path: &Path) -> Result<Self, LmdbError> {
        let temp = fresh_temp_dir(path)?;
        let cleanup = TempDirs { dir: temp.clone(), armed: true };
        let staging_path = temp.join(STAGING_FILE);
        // Read back in `finish`, so opened for both.
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&staging_path)
            .map_err(io_error(&staging_path))?;
        Ok(TraceStoreWriter {
            path: path.to_owned(),
            temp,
            staging_path,
            staging: BufWriter::with_capacity(1 << 20, file),
            staged_bytes: 0,
            staged: Vec::new(),
            addresses: HashMap::new(),
            types: HashMap::new(),
            type_list: Vec::new(),
            type_counts: Vec::new(),
            encoded: Vec::new(),
            cleanup,
        })
    }

    /// The id of an address, assigned on first use.
    pub fn address_id(&mut self, address: &str) -> u32 {
        let next = self.addresses.len() as u32;
        *self.addresses.entry(address.to_owned()).or_insert(next)
    }

    /// The addresses seen so far, indexed by the ids this writer gave them.
    pub fn addresses(&self) -> Vec<String> {
        let mut names = vec![String::new(); self.addresses.len()];
        for (name, &id) in &self.addresses {
            names[id as usize] = name.clone();
        }
        names
    }

    /// Bytes of the encoded traces added so far.
    pub fn staged_bytes(&self) -> u64 {
        self.staged_bytes
    }

    /// Add a trace whose choices use ids from [`address_id`](Self::address_id).
    pub fn add(&mut self, trace: &Trace) -> Result<(), LmdbError> {
        let trace_type = trace.trace_type();
        let next = self.type_list.len() as u32;
        let type_id = match self.types.get(&trace_type) {
            Some(&id) => id,
            None => {
                self.types.insert(trace_type.clone(), next);
                self.type_list.push(trace_type);
                self.type_counts.push(0);
                next
            }
        };
        self.type_counts[type_id as usize] += 1;
        trace_codec::encode(trace, &mut self.encoded);
        let len = u32::try_from(self.encoded.len()).map_err(|_| LmdbError::Corrupt {
            path: self.path.clone(),
            key: self.staged.len() as u64,
            at: 0,
            reason: "a trace of 4 GiB or more",
        })?;
        self.staging.write_all(&self.encoded).map_err(io_error(&self.staging_path))?;
        self.staged.push(Staged { type_id, len, offset: self.staged_bytes });
        self.staged_bytes += u64::from(len);
        Ok(())
    }

    /// Sort the staged traces into type order, write the dictionary and the
    /// type table, and move the store into place.
    pub fn finish(self) -> Result<(), LmdbError> {
        let own = self.addresses();
        self.finish_with_dictionary(&own)
    }

    /// [`finish`](Self::finish) with `dictionary` as the store's address
    /// dictionary (id = index): every address this writer saw must be in
    /// it, and the stored traces and types carry its ids.
    pub fn finish_with_dictionary(mut self, dictionary: &[String]) -> Result<(), LmdbError> {
        let id_of: HashMap<&str, u32> = dictionary.iter().enumerate().map(|(i, n)| (n.as_str(), i as u32)).collect();
        let mut map = vec![0u32; self.addresses.len()];
        for (name, &local) in &self.addresses {
            map[local as usize] = *id_of
                .get(name.as_str())
                .ok_or_else(|| LmdbError::Dictionary { path: self.path.clone(), address: name.clone() })?;
        }
        self.staging.flush().map_err(io_error(&self.staging_path))?;
        let staging = self.staging.get_ref();

        // Most frequent type first; ties keep the order of first arrival.
        let mut order: Vec<u32> = (0..self.type_list.len() as u32).collect();
        order.sort_by_key(|&t| std::cmp::Reverse(self.type_counts[t as usize]));
        let mut by_type: Vec<Vec<u32>> = self.type_counts.iter().map(|&n| Vec::with_capacity(n as usize)).collect();
        for (i, s) in self.staged.iter().enumerate() {
            by_type[s.type_id as usize].push(i as u32);
        }
        let sorted: Vec<u32> = order.iter().flat_map(|&t| by_type[t as usize].iter().copied()).collect();
        drop(by_type);

        // The sorted copy needs the staged bytes again, and a little for
        // LMDB's pages: say so now rather than fail half-way with LMDB's EIO.
        let needed = self.staged_bytes + self.staged_bytes / 16;
        let stat = rustix::fs::statvfs(&self.temp)
            .map_err(|e| LmdbError::Io { path: self.temp.clone(), source: std::io::Error::from(e) })?;
        let free = stat.f_bavail.saturating_mul(stat.f_frsize);
        if free < needed {
            return Err(LmdbError::NoSpace { path: self.path.clone(), needed, free });
        }
        // Room for every trace and LMDB's page overhead, so the map rarely grows.
        let map_size = ((self.staged_bytes as usize).saturating_add(self.staged_bytes as usize / 8) + INITIAL_MAP_SIZE)
            .next_multiple_of(1 << 16);
        let env = open_env_in(&self.temp, &self.path, MAX_DBS, map_size)?;
        let (traces, types, addresses) = {
            let mut txn = env.write_txn().map_err(lmdb_error(&self.path, "starting a write"))?;
            let traces: Database<U64<BigEndian>, Bytes> =
                env.create_database(&mut txn, Some(TRACES)).map_err(lmdb_error(&self.path, "creating traces"))?;
            let types: Database<U32<BigEndian>, Bytes> =
                env.create_database(&mut txn, Some(TYPES)).map_err(lmdb_error(&self.path, "creating types"))?;
            let addresses: Database<U32<BigEndian>, Str> =
                env.create_database(&mut txn, Some(ADDRESSES)).map_err(lmdb_error(&self.path, "creating addresses"))?;
            txn.commit().map_err(lmdb_error(&self.path, "committing"))?;
            (traces, types, addresses)
        };

        // Traces in type order, appended (keys ascend), a bounded chunk per transaction.
        let mut next = 0usize;
        while next < sorted.len() {
            let mut chunk: Vec<Vec<u8>> = Vec::new();
            let mut bytes = 0usize;
            while next + chunk.len() < sorted.len() && (chunk.is_empty() || bytes < CHUNK_BYTES) {
                let key = sorted[next + chunk.len()];
                let s = &self.staged[key as usize];
                let mut value = vec![0u8; s.len as usize];
                staging.read_exact_at(&mut value, s.offset).map_err(io_error(&self.staging_path))?;
                trace_codec::remap_addresses(&mut value, &map).map_err(|e| LmdbError::Corrupt {
                    path: self.staging_path.clone(),
                    key: u64::from(key),
                    at: e.at,
                    reason: e.reason,
                })?;
                bytes += value.len();
                chunk.push(value);
            }
            let first = next as u64;
            write_growing(&env, &self.path, "writing sorted traces", |env| {
                let mut txn = env.write_txn()?;
                for (i, value) in chunk.iter().enumerate() {
                    traces.put_with_flags(&mut txn, PutFlags::APPEND, &(first + i as u64), value)?;
                }
                txn.commit()
            })?;
            next += chunk.len();
        }

        let mut first = 0u64;
        let table: Vec<(u32, Vec<u8>)> = order
            .iter()
            .enumerate()
            .map(|(id, &local)| {
                let addresses = self.type_list[local as usize].iter().map(|&a| map[a as usize]).collect();
                let count = self.type_counts[local as usize];
                let t = TraceType { addresses, first, count };
                first += count;
                (id as u32, encode_type(&t))
            })
            .collect();
        write_growing(&env, &self.path, "writing the dictionary", |env| {
            let mut txn = env.write_txn()?;
            for (id, bytes) in &table {
                types.put(&mut txn, id, bytes)?;
            }
            for (id, name) in dictionary.iter().enumerate() {
                addresses.put(&mut txn, &(id as u32), name)?;
            }
            txn.commit()
        })?;
        env.force_sync().map_err(lmdb_error(&self.path, "syncing"))?;
        env.prepare_for_closing().wait();
        for leftover in [self.staging_path.clone(), self.temp.join("lock.mdb")] {
            if leftover.exists() {
                fs::remove_file(&leftover).map_err(io_error(&leftover))?;
            }
        }
        if self.path.exists() {
            fs::remove_dir_all(&self.path).map_err(io_error(&self.path))?;
        }
        fs::rename(&self.temp, &self.path).map_err(io_error(&self.path))?;
        self.cleanup.armed = false;
        Ok(())
    }
}

/// Run a write, doubling the map and retrying while it is full.
fn write_growing(
    env: &Env,
    path: &Path,
    what: &'static str,
    mut write: impl FnMut(&Env) -> Result<(), heed::Error>,
) -> Result<(), LmdbError> {
    loop {
        match write(env) {
            Ok(()) => return Ok(()),
            Err(e) if is_map_full(&e) => grow_map(env, path)?,
            Err(e) => return Err(lmdb_error(path, what)(e)),
        }
    }
}

/// A finished trace store, opened read-only; share it between threads.
pub struct TraceStore {
    env: std::sync::Arc<Env>,
    path: PathBuf,
    traces: Database<U64<BigEndian>, Bytes>,
    addresses: Vec<String>,
    types: Vec<TraceType>,
}

impl TraceStore {
    /// Open the store at `path`, loading the dictionary and type table.
    pub fn open(path: &Path) -> Result<Self, LmdbError> {
        let env = open_read_only(path, MAX_DBS)?;
        let missing = |database| LmdbError::Missing { path: path.to_owned(), kind: "trace", database };
        let txn = env.read_txn().map_err(lmdb_error(path, "starting a read"))?;
        let traces = env
            .open_database(&txn, Some(TRACES))
            .map_err(lmdb_error(path, "opening traces"))?
            .ok_or_else(|| missing(TRACES))?;
        let names: Database<U32<BigEndian>, Str> = env
            .open_database(&txn, Some(ADDRESSES))
            .map_err(lmdb_error(path, "opening addresses"))?
            .ok_or_else(|| missing(ADDRESSES))?;
        let type_db: Database<U32<BigEndian>, Bytes> = env
            .open_database(&txn, Some(TYPES))
            .map_err(lmdb_error(path, "opening trace types"))?
            .ok_or_else(|| missing(TYPES))?;
        let mut addresses = Vec::new();
        for (i, item) in names.iter(&txn).map_err(lmdb_error(path, "reading addresses"))?.enumerate() {
            let (id, name) = item.map_err(lmdb_error(path, "reading addresses"))?;
            if id as usize != i {
                return Err(LmdbError::Corrupt {
                    path: path.to_owned(),
                    key: id.into(),
                    at: 0,
                    reason: "address ids are not dense",
                });
            }
            addresses.push(name.to_owned());
        }
        let mut types = Vec::new();
        for item in type_db.iter(&txn).map_err(lmdb_error(path, "reading trace types"))? {
            let (id, bytes) = item.map_err(lmdb_error(path, "reading trace types"))?;
            let t = decode_type(bytes).ok_or(LmdbError::Corrupt {
                path: path.to_owned(),
                key: id.into(),
                at: 0,
                reason: "malformed trace type",
            })?;
            types.push(t);
        }
        // Committing (not dropping) keeps the database handles open.
        txn.commit().map_err(lmdb_error(path, "finishing the open"))?;
        Ok(TraceStore { env, path: path.to_owned(), traces, addresses, types })
    }

    /// Number of traces.
    pub fn len(&self) -> u64 {
        self.types.iter().map(|t| t.count).sum()
    }

    /// True if the store holds no trace.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The address dictionary, indexed by id.
    pub fn addresses(&self) -> &[String] {
        &self.addresses
    }

    /// Trace types in storage order, each with its contiguous range of traces.
    pub fn trace_types(&self) -> &[TraceType] {
        &self.types
    }

    /// Trace `index` (in trace-type order).
    pub fn get(&self, index: u64) -> Result<Option<Trace>, LmdbError> {
        let txn = self.env.read_txn().map_err(lmdb_error(&self.path, "starting a read"))?;
        let Some(bytes) = self.traces.get(&txn, &index).map_err(lmdb_error(&self.path, "reading a trace"))? else {
            return Ok(None);
        };
        trace_codec::decode(bytes).map(Some).map_err(|e| LmdbError::Corrupt {
            path: self.path.clone(),
            key: index,
            at: e.at,
            reason: e.reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{TraceType, decode_type, encode_type};

    /// A type record decodes to what was encoded; a record cut short or
    /// with bytes to spare anywhere is refused, never read as zeros.
    #[test]
    fn type_records_round_trip_and_truncated_ones_are_refused() {
        let t = TraceType { addresses: vec![3, 1, 4], first: 7, count: 2 };
        let bytes = encode_type(&t);
        assert_eq!(decode_type(&bytes), Some(t));
        for len in 0..bytes.len() {
            assert!(decode_type(&bytes[..len]).is_none(), "a record cut to {len} bytes");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_type(&longer).is_none(), "a record with a byte to spare");
    }
}

//! The trace store of Etalumis-style simulator traces: an address dictionary
//! (address string <-> id), and traces kept in trace-type order (the type of a
//! trace is its sequence of controlled address ids), so that a bucketed
//! sampler reading consecutive traces reads them sequentially.
//!
//! The writer stages traces under (type id, arrival) keys, which LMDB keeps
//! sorted on disk, then copies them out type by type on `finish`: an external
//! sort whose memory does not grow with the number of traces. Types are
//! stored most frequent first (ties by first arrival), so the type table
//! reads as the frequency table of the store. Several stores of one
//! dataset can share one address dictionary
//! ([`finish_with_dictionary`](TraceStoreWriter::finish_with_dictionary)),
//! so an address id means the same in each.

use std::collections::HashMap;
use std::fs;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use heed::byteorder::BigEndian;
use heed::types::{Bytes, Str, U32, U64};
use heed::{CompactionOption, Database, Env};

use super::trace_codec::{self, Trace};
use super::{LmdbError, create_env, grow_map, io_error, is_map_full, lmdb_error, open_read_only, temp_path_for};

const ADDRESSES: &str = "addresses";
const TRACES: &str = "traces";
const TYPES: &str = "trace_types";
const STAGING: &str = "staging";
const MAX_DBS: u32 = 8;
const BATCH_TRACES: usize = 4096;

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
    let u64_at = |i: usize| bytes.get(i..i + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    let u32_at = |i: usize| bytes.get(i..i + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])));
    let n = u32_at(16)? as usize;
    if bytes.len() != 20 + 4 * n {
        return None;
    }
    let addresses = (0..n).map(|i| u32_at(20 + 4 * i)).collect::<Option<_>>()?;
    Some(TraceType { first: u64_at(0)?, count: u64_at(8)?, addresses })
}

/// Builds a trace store; visible under its final name only after `finish`.
pub struct TraceStoreWriter {
    env: Env,
    path: PathBuf,
    temp: PathBuf,
    staging: Database<Bytes, Bytes>,
    addresses: HashMap<String, u32>,
    types: HashMap<Vec<u32>, u32>,
    type_list: Vec<Vec<u32>>,
    type_counts: Vec<u64>,
    pending: Vec<([u8; 12], Vec<u8>)>,
    arrivals: u64,
    // After `env`, so the environment is closed before its files go.
    cleanup: TempDirs,
}

/// A writer's temporary directories, removed when it is dropped before
/// `finish` succeeds (an error, a full disk, a panic): no half-written
/// store is left behind.
struct TempDirs {
    dirs: Vec<PathBuf>,
    armed: bool,
}

impl Drop for TempDirs {
    fn drop(&mut self) {
        if self.armed {
            for dir in &self.dirs {
                let _ = fs::remove_dir_all(dir);
            }
        }
    }
}

impl TraceStoreWriter {
    /// Start a store at `path` (a directory).
    pub fn create(path: &Path) -> Result<Self, LmdbError> {
        let (env, temp) = create_env(path, MAX_DBS)?;
        let mut txn = env.write_txn().map_err(lmdb_error(path, "starting a write"))?;
        let staging =
            env.create_database(&mut txn, Some(STAGING)).map_err(lmdb_error(path, "creating the staging database"))?;
        txn.commit().map_err(lmdb_error(path, "committing"))?;
        let cleanup = TempDirs { dirs: vec![temp_path_for(&temp), temp.clone()], armed: true };
        Ok(TraceStoreWriter {
            env,
            path: path.to_owned(),
            temp,
            staging,
            addresses: HashMap::new(),
            types: HashMap::new(),
            type_list: Vec::new(),
            type_counts: Vec::new(),
            pending: Vec::new(),
            arrivals: 0,
            cleanup,
        })
    }

    /// The id of an address, assigned on first use.
    pub fn address_id(&mut self, address: &str) -> u32 {
        let next = self.addresses.len() as u32;
        *self.addresses.entry(address.to_owned()).or_insert(next)
    }

    /// Add a trace whose choices use ids from [`address_id`](Self::address_id).
    pub fn add(&mut self, trace: &Trace) -> Result<(), LmdbError> {
        let trace_type = trace.trace_type();
        let next = self.type_list.len() as u32;
        let type_id = *self.types.entry(trace_type.clone()).or_insert_with(|| {
            self.type_list.push(trace_type);
            self.type_counts.push(0);
            next
        });
        self.type_counts[type_id as usize] += 1;
        let mut key = [0u8; 12];
        key[..4].copy_from_slice(&type_id.to_be_bytes());
        key[4..].copy_from_slice(&self.arrivals.to_be_bytes());
        self.arrivals += 1;
        let mut value = Vec::new();
        trace_codec::encode(trace, &mut value);
        self.pending.push((key, value));
        if self.pending.len() >= BATCH_TRACES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), LmdbError> {
        let pending = std::mem::take(&mut self.pending);
        let staging = self.staging;
        self.with_growth("staging traces", |env| {
            let mut txn = env.write_txn()?;
            for (k, v) in &pending {
                staging.put(&mut txn, k, v)?;
            }
            txn.commit()
        })
    }

    /// Run a write, doubling the map and retrying while it is full.
    fn with_growth(
        &mut self,
        what: &'static str,
        mut write: impl FnMut(&Env) -> Result<(), heed::Error>,
    ) -> Result<(), LmdbError> {
        loop {
            match write(&self.env) {
                Ok(()) => return Ok(()),
                Err(e) if is_map_full(&e) => grow_map(&self.env, &self.path)?,
                Err(e) => return Err(lmdb_error(&self.path, what)(e)),
            }
        }
    }

    /// The addresses seen so far, indexed by the ids this writer gave them.
    pub fn addresses(&self) -> Vec<String> {
        let mut names = vec![String::new(); self.addresses.len()];
        for (name, &id) in &self.addresses {
            names[id as usize] = name.clone();
        }
        names
    }

    /// Sort the staged traces into type order, write the dictionary and the
    /// type table, compact, and move the store into place.
    pub fn finish(self) -> Result<(), LmdbError> {
        let own = self.addresses();
        self.finish_with_dictionary(&own)
    }

    /// [`finish`](Self::finish) with `dictionary` as the store's address
    /// dictionary (id = index): every address this writer saw must be in
    /// it, and the stored traces and types carry its ids.
    pub fn finish_with_dictionary(mut self, dictionary: &[String]) -> Result<(), LmdbError> {
        self.flush()?;
        let id_of: HashMap<&str, u32> = dictionary.iter().enumerate().map(|(i, n)| (n.as_str(), i as u32)).collect();
        let mut map = vec![0u32; self.addresses.len()];
        for (name, &local) in &self.addresses {
            map[local as usize] = *id_of
                .get(name.as_str())
                .ok_or_else(|| LmdbError::Dictionary { path: self.path.clone(), address: name.clone() })?;
        }
        // Most frequent type first; ties keep the order of first arrival.
        let mut order: Vec<u32> = (0..self.type_list.len() as u32).collect();
        order.sort_by_key(|&t| std::cmp::Reverse(self.type_counts[t as usize]));
        let (traces, types, addresses) = {
            let mut txn = self.env.write_txn().map_err(lmdb_error(&self.path, "starting a write"))?;
            let traces: Database<U64<BigEndian>, Bytes> =
                self.env.create_database(&mut txn, Some(TRACES)).map_err(lmdb_error(&self.path, "creating traces"))?;
            let types: Database<U32<BigEndian>, Bytes> =
                self.env.create_database(&mut txn, Some(TYPES)).map_err(lmdb_error(&self.path, "creating types"))?;
            let addresses: Database<U32<BigEndian>, Str> = self
                .env
                .create_database(&mut txn, Some(ADDRESSES))
                .map_err(lmdb_error(&self.path, "creating addresses"))?;
            txn.commit().map_err(lmdb_error(&self.path, "committing"))?;
            (traces, types, addresses)
        };

        // Copy staged traces out type by type, one bounded chunk per transaction.
        let staging = self.staging;
        let mut next_index = 0u64;
        for &local_type in &order {
            let end = (local_type + 1).to_be_bytes();
            let mut after: Vec<u8> = local_type.to_be_bytes().to_vec();
            let mut start = Bound::Included(after.clone());
            loop {
                let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = {
                    let txn = self.env.read_txn().map_err(lmdb_error(&self.path, "reading staged traces"))?;
                    let range = (start.as_ref().map(Vec::as_slice), Bound::Excluded(&end[..]));
                    let iter = staging.range(&txn, &range).map_err(lmdb_error(&self.path, "reading staged traces"))?;
                    iter.take(BATCH_TRACES)
                        .map(|item| item.map(|(k, v)| (k.to_vec(), v.to_vec())))
                        .collect::<Result<_, _>>()
                        .map_err(lmdb_error(&self.path, "reading staged traces"))?
                };
                let Some((last, _)) = chunk.last() else { break };
                after.clone_from(last);
                start = Bound::Excluded(after.clone());
                for (key, value) in &mut chunk {
                    trace_codec::remap_addresses(value, &map).map_err(|e| LmdbError::Corrupt {
                        path: self.path.clone(),
                        key: key[4..].iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)),
                        at: e.at,
                        reason: e.reason,
                    })?;
                }
                let first = next_index;
                self.with_growth("writing sorted traces", |env| {
                    let mut txn = env.write_txn()?;
                    for (i, (_, v)) in chunk.iter().enumerate() {
                        traces.put(&mut txn, &(first + i as u64), v)?;
                    }
                    txn.commit()
                })?;
                next_index += chunk.len() as u64;
            }
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
        let names: Vec<(u32, String)> =
            dictionary.iter().enumerate().map(|(id, name)| (id as u32, name.clone())).collect();
        self.with_growth("writing the dictionary", |env| {
            let mut txn = env.write_txn()?;
            for (id, bytes) in &table {
                types.put(&mut txn, id, bytes)?;
            }
            for (id, name) in &names {
                addresses.put(&mut txn, id, name)?;
            }
            staging.clear(&mut txn)?;
            txn.commit()
        })?;

        // Compact into a fresh directory so the staging pages are not kept.
        let compact = temp_path_for(&self.temp);
        fs::create_dir_all(&compact).map_err(io_error(&compact))?;
        self.env
            .copy_to_path(compact.join("data.mdb"), CompactionOption::Enabled)
            .map_err(lmdb_error(&self.path, "compacting"))?;
        self.env.prepare_for_closing().wait();
        fs::remove_dir_all(&self.temp).map_err(io_error(&self.temp))?;
        fs::rename(&compact, &self.temp).map_err(io_error(&self.temp))?;
        if self.path.exists() {
            fs::remove_dir_all(&self.path).map_err(io_error(&self.path))?;
        }
        fs::rename(&self.temp, &self.path).map_err(io_error(&self.path))?;
        self.cleanup.armed = false;
        Ok(())
    }
}

/// A finished trace store, opened read-only; share it between threads.
pub struct TraceStore {
    env: Env,
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

//! Binary layout of one simulator trace (Etalumis-style), as stored in the
//! trace store: little-endian, every length checked on decode.
//!
//! ```text
//! u8 ndim | u32 dims[ndim] | f32 observation[prod(dims)]
//! u32 nchoices | nchoices x ( u32 address_id | u8 controlled | u8 dist | params | f64 value )
//! dist 0 Normal(f64 mean, f64 std) | 1 Uniform(f64 low, f64 high)
//!      2 Categorical(u32 n, f64 probs[n]) | 3 Poisson(f64 rate) | 4 Bernoulli(f64 p)
//! ```

/// A prior/proposal distribution of one random choice.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Distribution {
    Normal { mean: f64, std: f64 },
    Uniform { low: f64, high: f64 },
    Categorical { probs: Vec<f64> },
    Poisson { rate: f64 },
    Bernoulli { p: f64 },
}

impl Distribution {
    /// log density (or mass) of `x`: -inf where `x` cannot occur. Kept with
    /// the stored distribution because every reader of traces needs it: the
    /// simulator scores its choices, the trainer compares its proposals
    /// with the priors.
    pub fn log_prob(&self, x: f64) -> f64 {
        match self {
            // Normal density: -(x-μ)²/(2σ²) - ln σ - ln(2π)/2.
            Distribution::Normal { mean, std } => {
                let z = (x - mean) / std;
                -0.5 * z * z - std.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
            }
            Distribution::Uniform { low, high } => {
                if (*low..=*high).contains(&x) {
                    -(high - low).ln()
                } else {
                    f64::NEG_INFINITY
                }
            }
            Distribution::Categorical { probs } => match as_count(x) {
                Some(k) if k < probs.len() as u64 => (probs[k as usize] / probs.iter().sum::<f64>()).ln(),
                _ => f64::NEG_INFINITY,
            },
            // Poisson mass: k ln λ - λ - ln k!.
            Distribution::Poisson { rate } => match as_count(x) {
                Some(k) => k as f64 * rate.ln() - rate - ln_factorial(k),
                None => f64::NEG_INFINITY,
            },
            Distribution::Bernoulli { p } => match as_count(x) {
                Some(1) => p.ln(),
                Some(0) => (1.0 - p).ln(),
                _ => f64::NEG_INFINITY,
            },
        }
    }
}

fn as_count(x: f64) -> Option<u64> {
    (x >= 0.0 && x.fract() == 0.0 && x < 2f64.powi(53)).then_some(x as u64)
}

/// ln k!: summed exactly up to 256, Stirling's series beyond (its error
/// there is below 1e-15 relative).
fn ln_factorial(k: u64) -> f64 {
    if k <= 256 {
        return (2..=k).map(|i| (i as f64).ln()).sum();
    }
    let n = k as f64;
    n * n.ln() - n + 0.5 * (2.0 * std::f64::consts::PI * n).ln() + 1.0 / (12.0 * n) - 1.0 / (360.0 * n.powi(3))
}

/// One random choice with its address id (see the store's address dictionary).
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Address id.
    pub address: u32,
    /// Whether inference controls it (observed choices are not controlled).
    pub controlled: bool,
    /// Its distribution.
    pub distribution: Distribution,
    /// The value drawn.
    pub value: f64,
}

/// A trace: the observation tensor and the random choices in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    /// Observation shape (for example a 3-D detector grid).
    pub shape: Vec<u32>,
    /// Observation values, C order.
    pub observation: Vec<f32>,
    /// Random choices in execution order.
    pub choices: Vec<Choice>,
}

impl Trace {
    /// The trace type: the sequence of controlled address ids.
    pub fn trace_type(&self) -> Vec<u32> {
        self.choices.iter().filter(|c| c.controlled).map(|c| c.address).collect()
    }
}

/// Where and why a stored trace does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("byte {at}: {reason}")]
pub struct DecodeError {
    /// Byte offset in the value.
    pub at: usize,
    /// What is wrong.
    pub reason: &'static str,
}

/// Encode a trace.
pub fn encode(trace: &Trace, out: &mut Vec<u8>) {
    out.clear();
    out.push(trace.shape.len() as u8);
    for d in &trace.shape {
        out.extend_from_slice(&d.to_le_bytes());
    }
    for v in &trace.observation {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&(trace.choices.len() as u32).to_le_bytes());
    for c in &trace.choices {
        out.extend_from_slice(&c.address.to_le_bytes());
        out.push(u8::from(c.controlled));
        match &c.distribution {
            Distribution::Normal { mean, std } => {
                out.push(0);
                out.extend_from_slice(&mean.to_le_bytes());
                out.extend_from_slice(&std.to_le_bytes());
            }
            Distribution::Uniform { low, high } => {
                out.push(1);
                out.extend_from_slice(&low.to_le_bytes());
                out.extend_from_slice(&high.to_le_bytes());
            }
            Distribution::Categorical { probs } => {
                out.push(2);
                out.extend_from_slice(&(probs.len() as u32).to_le_bytes());
                for p in probs {
                    out.extend_from_slice(&p.to_le_bytes());
                }
            }
            Distribution::Poisson { rate } => {
                out.push(3);
                out.extend_from_slice(&rate.to_le_bytes());
            }
            Distribution::Bernoulli { p } => {
                out.push(4);
                out.extend_from_slice(&p.to_le_bytes());
            }
        }
        out.extend_from_slice(&c.value.to_le_bytes());
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(DecodeError { at: self.pos, reason: "value ends early" });
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn f64(&mut self) -> Result<f64, DecodeError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(f64::from_le_bytes(a))
    }
    /// A count of items of at least `item_bytes` each that must fit in what is left.
    fn count(&mut self, item_bytes: usize) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = self.u32()? as usize;
        if n.saturating_mul(item_bytes) > self.bytes.len() - self.pos {
            return Err(DecodeError { at, reason: "count larger than the value" });
        }
        Ok(n)
    }
}

/// Smallest encoded choice: id, controlled, tag, one f64 param, value.
const MIN_CHOICE_BYTES: usize = 4 + 1 + 1 + 8 + 8;

/// Decode a trace; every length is checked against the bytes present.
pub fn decode(bytes: &[u8]) -> Result<Trace, DecodeError> {
    let mut c = Cursor { bytes, pos: 0 };
    let ndim = c.u8()? as usize;
    let mut shape = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        shape.push(c.u32()?);
    }
    let at = c.pos;
    let values = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d as usize));
    let values = values
        .filter(|n| n.saturating_mul(4) <= bytes.len() - c.pos)
        .ok_or(DecodeError { at, reason: "observation larger than the value" })?;
    let observation =
        c.take(values * 4)?.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let n = c.count(MIN_CHOICE_BYTES)?;
    let mut choices = Vec::with_capacity(n);
    for _ in 0..n {
        let address = c.u32()?;
        let controlled = match c.u8()? {
            0 => false,
            1 => true,
            _ => return Err(DecodeError { at: c.pos - 1, reason: "controlled flag not 0 or 1" }),
        };
        let tag_at = c.pos;
        let distribution = match c.u8()? {
            0 => Distribution::Normal { mean: c.f64()?, std: c.f64()? },
            1 => Distribution::Uniform { low: c.f64()?, high: c.f64()? },
            2 => {
                let k = c.count(8)?;
                let probs = (0..k).map(|_| c.f64()).collect::<Result<_, _>>()?;
                Distribution::Categorical { probs }
            }
            3 => Distribution::Poisson { rate: c.f64()? },
            4 => Distribution::Bernoulli { p: c.f64()? },
            _ => return Err(DecodeError { at: tag_at, reason: "unknown distribution tag" }),
        };
        let value = c.f64()?;
        choices.push(Choice { address, controlled, distribution, value });
    }
    if c.pos != bytes.len() {
        return Err(DecodeError { at: c.pos, reason: "trailing bytes after the last choice" });
    }
    Ok(Trace { shape, observation, choices })
}

/// Rewrite the address ids of an encoded trace in place, id `a` becoming
/// `map[a]`, without decoding the observation: how a writer gives traces
/// staged with its own ids the ids of a dictionary shared by many stores.
pub fn remap_addresses(bytes: &mut [u8], map: &[u32]) -> Result<(), DecodeError> {
    let mut c = Cursor { bytes: &*bytes, pos: 0 };
    let ndim = c.u8()? as usize;
    // As `decode` counts: a product that overflows is an error even when a
    // later dimension is 0.
    let mut values = Some(1usize);
    for _ in 0..ndim {
        let d = c.u32()? as usize;
        values = values.and_then(|v| v.checked_mul(d));
    }
    let bytes_of_observation = values.and_then(|v| v.checked_mul(4));
    c.take(bytes_of_observation.ok_or(DecodeError { at: c.pos, reason: "observation larger than the value" })?)?;
    let n = c.count(MIN_CHOICE_BYTES)?;
    let mut at = Vec::with_capacity(n);
    for _ in 0..n {
        at.push(c.pos);
        let address = c.u32()?;
        if address as usize >= map.len() {
            return Err(DecodeError { at: c.pos - 4, reason: "address id outside the map" });
        }
        if c.u8()? > 1 {
            return Err(DecodeError { at: c.pos - 1, reason: "controlled flag not 0 or 1" });
        }
        let tag_at = c.pos;
        let params = match c.u8()? {
            0 | 1 => 16,
            2 => 8 * c.count(8)?,
            3 | 4 => 8,
            _ => return Err(DecodeError { at: tag_at, reason: "unknown distribution tag" }),
        };
        c.take(params + 8)?;
    }
    if c.pos != bytes.len() {
        return Err(DecodeError { at: c.pos, reason: "trailing bytes after the last choice" });
    }
    for pos in at {
        let old = u32::from_le_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]]);
        bytes[pos..pos + 4].copy_from_slice(&map[old as usize].to_le_bytes());
    }
    Ok(())
}

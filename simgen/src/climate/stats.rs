//! Per-channel statistics of the training samples, as DeepCAM's
//! `summarize_data.py` writes them to `stats.h5`: minimum, maximum, mean and
//! mean of squares per channel, and the number of samples. Accumulated per
//! rank in f64 and merged across ranks.

use formats::climate::ChannelStats;

/// Running sums of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Accumulator {
    samples: u64,
    values: u64,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
    min: Vec<f64>,
    max: Vec<f64>,
}

impl Accumulator {
    /// Empty sums for `channels` channels.
    pub fn new(channels: usize) -> Accumulator {
        Accumulator {
            samples: 0,
            values: 0,
            sum: vec![0.0; channels],
            sum_sq: vec![0.0; channels],
            min: vec![f64::INFINITY; channels],
            max: vec![f64::NEG_INFINITY; channels],
        }
    }

    /// Add one sample's channel-last data.
    pub fn add(&mut self, data: &[f32]) {
        let c = self.sum.len();
        for px in data.chunks_exact(c) {
            for (k, &v) in px.iter().enumerate() {
                let v = f64::from(v);
                self.sum[k] += v;
                self.sum_sq[k] += v * v;
                self.min[k] = self.min[k].min(v);
                self.max[k] = self.max[k].max(v);
            }
        }
        self.samples += 1;
        self.values += (data.len() / c) as u64;
    }

    /// Fold another rank's sums in.
    pub fn merge(&mut self, other: &Accumulator) {
        self.samples += other.samples;
        self.values += other.values;
        for k in 0..self.sum.len() {
            self.sum[k] += other.sum[k];
            self.sum_sq[k] += other.sum_sq[k];
            self.min[k] = self.min[k].min(other.min[k]);
            self.max[k] = self.max[k].max(other.max[k]);
        }
    }

    /// As bytes, to gather across ranks.
    pub fn to_bytes(&self) -> Vec<u8> {
        let head = [self.samples as f64, self.values as f64];
        head.iter()
            .chain(&self.sum)
            .chain(&self.sum_sq)
            .chain(&self.min)
            .chain(&self.max)
            .flat_map(|v| v.to_le_bytes())
            .collect()
    }

    /// Back from [`to_bytes`](Self::to_bytes) of an accumulator of
    /// `channels` channels; `None` if the length is wrong.
    pub fn from_bytes(bytes: &[u8], channels: usize) -> Option<Accumulator> {
        if bytes.len() != (2 + 4 * channels) * 8 {
            return None;
        }
        let v: Vec<f64> = bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).collect();
        let part = |i: usize| v[2 + i * channels..2 + (i + 1) * channels].to_vec();
        Some(Accumulator {
            samples: v[0] as u64,
            values: v[1] as u64,
            sum: part(0),
            sum_sq: part(1),
            min: part(2),
            max: part(3),
        })
    }

    /// The statistics `stats.h5` holds; `None` before any sample.
    pub fn stats(&self) -> Option<ChannelStats> {
        if self.values == 0 {
            return None;
        }
        let n = self.values as f64;
        let f = |v: &[f64], scale: f64| v.iter().map(|x| (x * scale) as f32).collect::<Vec<f32>>();
        Some(ChannelStats {
            count: self.samples as i64,
            mean: f(&self.sum, 1.0 / n),
            sqmean: f(&self.sum_sq, 1.0 / n),
            minval: f(&self.min, 1.0),
            maxval: f(&self.max, 1.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_ranks_give_the_statistics_of_all_samples() {
        let a = [1.0f32, 10.0, 3.0, 30.0];
        let b = [5.0f32, 50.0];
        let (mut one, mut two, mut all) = (Accumulator::new(2), Accumulator::new(2), Accumulator::new(2));
        one.add(&a);
        two.add(&b);
        all.add(&a);
        all.add(&b);
        let back = Accumulator::from_bytes(&two.to_bytes(), 2).unwrap();
        assert_eq!(back, two);
        one.merge(&back);
        assert_eq!(one, all);
        let s = all.stats().unwrap();
        assert_eq!(s.count, 2);
        assert_eq!(s.mean, vec![3.0, 30.0]);
        assert_eq!(s.minval, vec![1.0, 10.0]);
        assert_eq!(s.maxval, vec![5.0, 50.0]);
        assert!((s.sqmean[0] - 35.0 / 3.0).abs() < 1e-6);
        assert!(Accumulator::new(2).stats().is_none());
        assert!(Accumulator::from_bytes(&[0; 7], 2).is_none());
    }
}

//! Tensor fusion (Horovod's idea): many small gradient tensors are packed
//! into a few flat buffers of at most `fusion_bytes`, so the allreduce runs
//! on large messages. Pure logic: which tensor goes where, pack and unpack.

/// Where each tensor lies in the fusion buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FusionPlan {
    /// Per buffer: its length in values.
    buffers: Vec<usize>,
    /// Per tensor: (buffer, offset in values, length).
    places: Vec<(usize, usize, usize)>,
}

impl FusionPlan {
    /// Pack tensors of `lengths` values (f32) in order into buffers of at
    /// most `fusion_bytes`; a tensor larger than that gets a buffer alone.
    /// `fusion_bytes = 0` gives one buffer per tensor (no fusion).
    pub fn new(lengths: &[usize], fusion_bytes: usize) -> Self {
        let cap = fusion_bytes / 4;
        let mut buffers: Vec<usize> = Vec::new();
        let mut places = Vec::with_capacity(lengths.len());
        for &len in lengths {
            let count = buffers.len();
            match buffers.last_mut() {
                Some(last) if cap > 0 && *last + len <= cap => {
                    places.push((count - 1, *last, len));
                    *last += len;
                }
                _ => {
                    places.push((count, 0, len));
                    buffers.push(len);
                }
            }
        }
        FusionPlan { buffers, places }
    }

    /// Number of buffers (allreduce calls per step).
    pub fn buffers(&self) -> usize {
        self.buffers.len()
    }

    /// Length of buffer `b` in values.
    pub fn buffer_len(&self, b: usize) -> usize {
        self.buffers[b]
    }

    /// (buffer, offset, length) of tensor `t`.
    pub fn place(&self, t: usize) -> (usize, usize, usize) {
        self.places[t]
    }

    /// Total values.
    pub fn total(&self) -> usize {
        self.buffers.iter().sum()
    }

    /// Fresh zeroed buffers for this plan.
    pub fn allocate(&self) -> Vec<Vec<f32>> {
        self.buffers.iter().map(|&len| vec![0.0; len]).collect()
    }

    /// Copy `tensors` (in plan order) into `buffers`.
    pub fn pack(&self, tensors: &[&[f32]], buffers: &mut [Vec<f32>]) {
        for (tensor, &(b, offset, len)) in tensors.iter().zip(&self.places) {
            buffers[b][offset..offset + len].copy_from_slice(&tensor[..len]);
        }
    }

    /// Copy `buffers` back into `tensors`, scaled by `scale` (1/ranks to average).
    pub fn unpack(&self, buffers: &[Vec<f32>], tensors: &mut [&mut [f32]], scale: f32) {
        for (tensor, &(b, offset, len)) in tensors.iter_mut().zip(&self.places) {
            for (t, v) in tensor[..len].iter_mut().zip(&buffers[b][offset..offset + len]) {
                *t = v * scale;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_tensors_share_buffers_and_a_large_one_stands_alone() {
        let plan = FusionPlan::new(&[10, 20, 5, 100, 3], 40 * 4);
        assert_eq!(plan.buffers, vec![35, 100, 3]);
        assert_eq!(plan.places[2], (0, 30, 5));
        assert_eq!(FusionPlan::new(&[10, 20], 0).buffers(), 2);
    }

    proptest! {
        #[test]
        fn pack_then_unpack_gives_every_tensor_back(
            lengths in proptest::collection::vec(0usize..50, 0..20),
            fusion in 0usize..400,
        ) {
            let plan = FusionPlan::new(&lengths, fusion);
            prop_assert_eq!(plan.total(), lengths.iter().sum::<usize>());
            for b in 0..plan.buffers() {
                // Only a buffer holding a single tensor may exceed the cap.
                let members = plan.places.iter().filter(|p| p.0 == b).count();
                prop_assert!(plan.buffer_len(b) * 4 <= fusion || members == 1);
            }
            let tensors: Vec<Vec<f32>> =
                lengths.iter().enumerate().map(|(i, &n)| (0..n).map(|v| (i * 100 + v) as f32).collect()).collect();
            let mut buffers = plan.allocate();
            plan.pack(&tensors.iter().map(Vec::as_slice).collect::<Vec<_>>(), &mut buffers);
            let mut back: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0; n]).collect();
            plan.unpack(&buffers, &mut back.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>(), 0.5);
            for (t, b) in tensors.iter().zip(&back) {
                prop_assert!(t.iter().zip(b).all(|(x, y)| x * 0.5 == *y));
            }
        }
    }
}

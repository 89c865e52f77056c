//! Data-parallel training of the published scientific models with MPI allreduce of fused gradients (issue: trainer). Not built yet: this crate is a placeholder so the workspace has its final shape.

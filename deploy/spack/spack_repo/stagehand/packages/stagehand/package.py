# Spack recipe for Stagehand (docs/deploy.md). Written against Spack v1's
# documented package API and the spack/spack-packages builtin repository;
# not built here (Spack is not installable on the machine our CI runs on):
# python/tests/test_spack.py checks its syntax and the dependencies and
# variants it names.

from spack_repo.builtin.build_systems.generic import Package

from spack.package import *


class Stagehand(Package):
    """Moves scientific training data for deep learning on supercomputers:
    stager copies a dataset from the shared file system to node-local
    storage over MPI (and serves it during training), simgen generates
    physics data on the nodes, trainer runs the published scientific models
    data-parallel, and the stagehand Python package feeds PyTorch and
    TensorFlow trainers."""

    homepage = "https://example.invalid/stagehand"
    git = "https://example.invalid/stagehand.git"

    license("MIT OR Apache-2.0")

    version("main", branch="main")

    variant("python", default=True, description="Build and install the stagehand Python package")

    # rust-version in Cargo.toml.
    depends_on("rust@1.95:", type="build")
    # C compilers for the crates that build C (zstd, lmdb, xxhash dispatch).
    depends_on("c", type="build")
    # mpi-sys and hdf5-metno-sys generate their bindings with bindgen,
    # which loads libclang.
    depends_on("llvm+clang", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("mpi")
    # The HDF5 versions hdf5-metno-sys 0.12 knows; serial or parallel
    # (Stagehand opens files per rank, never collectively).
    depends_on("hdf5@1.10:2.2")
    # libzmq for the PPX protocol (the zmq crate finds it through pkg-config).
    depends_on("libzmq@4.1:")

    with when("+python"):
        extends("python")
        depends_on("python@3.9:", type=("build", "run"))
        depends_on("py-maturin@1.9:1", type="build")
        depends_on("py-pip", type="build")
        depends_on("py-numpy@1.21:", type=("build", "run"))

    def setup_build_environment(self, env: EnvironmentModifications) -> None:
        env.set("CARGO_HOME", join_path(self.stage.path, ".cargo"))
        env.set("HDF5_DIR", self.spec["hdf5"].prefix)
        env.set("LIBCLANG_PATH", self.spec["llvm"].prefix.lib)
        # The mpi crate finds the site's MPI through its compiler wrapper.
        env.set("MPICC", self.spec["mpi"].mpicc)

    def install(self, spec, prefix):
        cargo = which("cargo", required=True)
        binaries = ("stager", "simgen", "trainer")
        with working_dir(self.stage.source_path):
            packages = [f"--package=stagehand-{name}" for name in binaries]
            cargo("build", "--release", "--locked", f"--jobs={make_jobs}", *packages)
            mkdirp(prefix.bin)
            for name in binaries:
                install(join_path("target", "release", name), prefix.bin)
            if spec.satisfies("+python"):
                maturin = which("maturin", required=True)
                wheels = join_path(self.stage.path, "wheels")
                # A wheel for this installation only: no manylinux audit.
                maturin("build", "--release", "--locked", "--compatibility", "linux",
                        "--manifest-path", join_path("python", "Cargo.toml"), "--out", wheels)
                wheel = find(wheels, "stagehand-*.whl", recursive=False)
                python("-m", "pip", "install", "--no-deps", "--no-build-isolation",
                       f"--prefix={prefix}", *wheel)

    @run_after("install")
    def check_binaries(self):
        for name in ("stager", "simgen", "trainer"):
            Executable(join_path(self.prefix.bin, name))("--help", output=str)

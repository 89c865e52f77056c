//! `trainer`: data-parallel training over MPI, fed by the loader.

use std::ffi::OsString;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use cluster::World;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use trainer::engine::DeviceChoice;
use trainer::kernels::Precision;
use trainer::kernels::wait::WaitPolicy;
use trainer::models;

mod exchange_model;
mod infer;
mod plot;
mod train;

use exchange_model::{ExchangeModelArgs, exchange_model, exchanged_bytes};
use infer::{InferArgs, infer, infer_over_ppx, prepare_infer, prepare_infer_ppx};
use plot::{PlotArgs, plot};
use train::{TrainArgs, WaitArg, list_models, prepare, train};

/// mimalloc rather than glibc's malloc: a training step allocates and
/// frees many tensors of many sizes, and glibc's slow paths (consolidating
/// and unlinking free chunks) held a large share of the smaller models'
/// steps; what it gains and what it costs in memory is in
/// docs/benchmarks.md (Allocator).
#[global_allocator]
static ALLOCATOR: trainer::allocator::Allocator = mimalloc::MiMalloc;

/// Train scientific models data-parallel over MPI.
///
/// Run under mpirun or srun: rank 0's initial parameters go to every rank,
/// each rank trains on its share of every batch, gradients are averaged with
/// fused MPI allreduce, and at each epoch's end the ranks check that they
/// hold identical parameters. Rank 0 prints one line per epoch and, at the
/// end, a JSON report on stdout.
#[derive(Parser, Debug)]
#[command(version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Train a model on a dataset (a directory, or what `stager stage` put
    /// on each node): `trainer train MODEL [OPTIONS]`; `--model MODEL`
    /// anywhere names it too, and cosmoflow is trained when none is named.
    /// `trainer train MODEL --help` lists the options of that model.
    Train,
    /// List the models, their configurations and parameter counts.
    Models,
    /// Importance sampling for held-out observations with a trained
    /// Etalumis network's proposals, against the prior as proposal.
    Infer(InferArgs),
    /// Draw the loss curves of one or several training reports (`trainer
    /// train --report`) into one PNG: each run's loss smoothed, the raw
    /// loss faint behind it, its validation loss per epoch, one colour per
    /// run with a legend.
    Plot(PlotArgs),
    /// Predict the gradient exchange's time, flat and hierarchical, from 1
    /// node to a machine of the seeds' size (Summit: 4,608 nodes of 6
    /// GPUs), with the alpha-beta model fed by the link between two ranks
    /// and the summing speed measured here (run under `mpirun -np 2`, or
    /// give the link with --intra-latency-us and --intra-gb-per-sec) and
    /// the link between nodes as given.
    ExchangeModel(ExchangeModelArgs),
}

/// The command line: the commands, and under `train` one command per model
/// with the options every model takes and its own.
fn cli() -> clap::Command {
    Cli::command().mut_subcommand("train", |train| {
        let train = train
            .subcommand_required(true)
            .subcommand_value_name("MODEL")
            .subcommand_help_heading("Models")
            .disable_help_subcommand(true);
        models::MODELS.iter().fold(train, |train, entry| {
            // The about last: deriving the options sets their struct's doc.
            train.subcommand(entry.command(TrainArgs::augment_args(clap::Command::new(entry.name))).about(entry.about))
        })
    })
}

/// `trainer train ... --model NAME ...` as `trainer train NAME ...`, and
/// `trainer train OPTIONS` without a model as `trainer train cosmoflow
/// OPTIONS`: how the command line named the model before each model had a
/// command of its own.
fn model_first(mut argv: Vec<OsString>) -> Vec<OsString> {
    if argv.len() < 3 || argv[1] != "train" {
        return argv;
    }
    let named = |arg: &OsString| models::MODELS.iter().any(|m| arg == m.name);
    if named(&argv[2]) || ["help", "-h", "--help"].iter().any(|h| argv[2] == *h) {
        return argv;
    }
    let flag = argv.iter().position(|a| a == "--model" || a.to_str().is_some_and(|a| a.starts_with("--model=")));
    let model = match flag {
        Some(i) if argv[i] == "--model" && i + 1 < argv.len() => {
            let model = argv.remove(i + 1);
            argv.remove(i);
            model
        }
        Some(i) => match argv[i].to_str().and_then(|a| a.strip_prefix("--model=")) {
            Some(model) => {
                let model = OsString::from(model);
                argv.remove(i);
                model
            }
            None => return argv,
        },
        None => OsString::from("cosmoflow"),
    };
    argv.insert(2, model);
    argv
}

/// Print a command-line error once for all ranks, as one line, and exit
/// with its code (2); `--help` and `--version` print in full and exit 0.
fn usage_error(e: clap::Error) -> ! {
    cluster::logging::exit_on_usage(&e.render().to_string(), e.exit_code(), || drop(e.print()))
}

/// A command's options or inputs refused before MPI starts: one line
/// (from one rank of an mpirun), exit 2.
fn exit_before_mpi(error: &anyhow::Error) -> ! {
    cluster::logging::print_error_once(format_args!("{}", cluster::logging::chain(error.as_ref())));
    std::process::exit(2)
}

/// MPI started, or one line and exit 1.
fn init_world() -> World {
    World::init().unwrap_or_else(|e| {
        cluster::logging::print_error(&e);
        std::process::exit(1)
    })
}

fn main() {
    // Before the pool's threads start (they keep the arena they first get).
    trainer::allocator::keep_freed_memory();
    trainer::kernels::on_pool(run);
}

fn run() {
    let matches =
        cli().try_get_matches_from(model_first(std::env::args_os().collect())).unwrap_or_else(|e| usage_error(e));
    let parsed = Cli::from_arg_matches(&matches).unwrap_or_else(|e| usage_error(e));
    match parsed.command {
        Command::Train => {}
        Command::Models => {
            if let Err(e) = list_models() {
                cluster::logging::print_error(format_args!("{}", cluster::logging::chain(e.as_ref())));
                std::process::exit(1);
            }
            return;
        }
        Command::Plot(args) => {
            if let Err(e) = plot(&args) {
                cluster::logging::print_error(format_args!("{}", cluster::logging::chain(e.as_ref())));
                std::process::exit(1);
            }
            return;
        }
        Command::ExchangeModel(args) => {
            let exchanged = exchanged_bytes(&args).unwrap_or_else(|e| exit_before_mpi(&e));
            let world = init_world();
            if world.size() < 2 && args.intra_latency_us.is_none() {
                let speaks = world.is_root();
                world.exit_agreed(
                    speaks,
                    "trainer exchange-model measures the link between two ranks: run it under `mpirun -np 2`",
                );
            }
            if let Err(e) = exchange_model(&world, &args, exchanged) {
                world.fail(cluster::logging::chain(e.as_ref()));
            }
            return;
        }
        Command::Infer(args) if args.ppx.is_some() => {
            let (config, prepared) = prepare_infer_ppx(&args).unwrap_or_else(|e| exit_before_mpi(&e));
            let world = init_world();
            if let Err(e) = infer_over_ppx(&world, &args, &config, &prepared) {
                world.fail(cluster::logging::chain(e.as_ref()));
            }
            return;
        }
        Command::Infer(args) => {
            // Bad arguments, checkpoints or data exit 2 before MPI; a
            // failure while sampling (the simulator, the network) exits 1.
            let (config, prepared) = prepare_infer(&args).unwrap_or_else(|e| exit_before_mpi(&e));
            let world = init_world();
            if let Err(e) = infer(&world, &args, &config, &prepared) {
                world.fail(cluster::logging::chain(e.as_ref()));
            }
            return;
        }
    }
    // `train` requires a model's command, so both are there.
    let Some((name, model_matches)) = matches.subcommand().and_then(|(_, train)| train.subcommand()) else {
        usage_error(cli().error(clap::error::ErrorKind::MissingSubcommand, "trainer train needs a MODEL"))
    };
    let args = TrainArgs::from_arg_matches(model_matches).unwrap_or_else(|e| usage_error(e));
    let entry = match models::find(name) {
        Ok(entry) => entry,
        Err(e) => usage_error(cli().error(clap::error::ErrorKind::InvalidSubcommand, e)),
    };
    // Check what can be checked before MPI starts, so a typo, a missing
    // GPU or a dataset of the wrong kind fails with one line and exit 2.
    let (model, mut config, baseline) = prepare(&args, entry, model_matches).unwrap_or_else(|e| exit_before_mpi(&e));
    let world = init_world();
    cluster::logging::init(world.topology(), Some("warn"));
    if args.wait_policy == WaitArg::Auto {
        config.wait = WaitPolicy::auto_here(world.ranks_on_machine());
    }
    // Before anything computes: the measurement switches the process's
    // kernel path while it times each. bf16 computes on the AVX-512
    // path's kernels alone, so other precisions keep the widest path.
    // Every rank runs the same path (`calibrate_agreed` says why).
    if config.precision == Precision::F32 && config.device == DeviceChoice::Cpu {
        trainer::kernels::calibrate::calibrate_agreed(world.size(), |ms| {
            let local = ms.to_vec();
            world.comm().all_reduce_into(&local[..], ms, SystemOperation::max());
        });
    }
    if let Err(e) = train(&world, model, &config, baseline, &args) {
        match e.downcast_ref::<trainer::engine::TrainError>() {
            // Every rank stopped at the same step and knows it: one prints,
            // all finalise MPI and exit non-zero.
            Some(agreed @ trainer::engine::TrainError::NonFinite(_)) => {
                world.exit_agreed(agreed.reported_here(), cluster::logging::chain(e.as_ref()))
            }
            // A failure on one rank is not seen by the others, which would
            // wait in the next allreduce: end the whole job.
            _ => world.fail(cluster::logging::chain(e.as_ref())),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn argv(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn the_model_flag_becomes_the_models_command_and_cosmoflow_is_the_default() {
        let cases = [
            ("trainer train --data d --model etalumis --batch 2", "trainer train etalumis --data d --batch 2"),
            ("trainer train --model=tiramisu --data d", "trainer train tiramisu --data d"),
            ("trainer train --data d", "trainer train cosmoflow --data d"),
            ("trainer train inverse --data d", "trainer train inverse --data d"),
            ("trainer train --help", "trainer train --help"),
            ("trainer train", "trainer train"),
            ("trainer models", "trainer models"),
        ];
        for (given, wanted) in cases {
            assert_eq!(model_first(argv(given)), argv(wanted), "{given}");
        }
    }

    #[test]
    fn a_flag_another_model_has_is_refused_by_the_command_line_in_one_line() {
        let error = cli()
            .try_get_matches_from(model_first(argv("trainer train --model cosmoflow --lstm-depth 3 --data d")))
            .unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::UnknownArgument);
        assert_eq!(error.exit_code(), 2);
        let line = cluster::logging::usage_line(&error.render().to_string());
        assert_eq!(line, "error: unexpected argument '--lstm-depth' found; see `trainer train cosmoflow --help`");
        for (model, flag) in
            [("etalumis", "--dropout 0.1"), ("deeplabv3plus", "--dropout 0.1"), ("tiramisu", "--init he")]
        {
            let line = format!("trainer train {model} {flag} --data d");
            assert!(cli().try_get_matches_from(argv(&line)).is_err(), "{line}");
        }
        assert!(cli().try_get_matches_from(argv("trainer train etalumis --lstm-depth 3 --data d")).is_ok());
    }

    #[test]
    fn a_missing_argument_is_named_in_the_one_line() {
        let error = cli().try_get_matches_from(argv("trainer plot")).unwrap_err();
        let line = cluster::logging::usage_line(&error.render().to_string());
        assert_eq!(
            line,
            "error: the following required arguments were not provided: <REPORTS>...; see `trainer plot --help`"
        );
    }

    #[test]
    fn every_model_has_a_command_with_the_common_and_its_own_options() {
        let command = cli();
        let train = command.find_subcommand("train").unwrap();
        for entry in models::MODELS {
            let model = train.find_subcommand(entry.name).unwrap();
            assert!(model.get_arguments().any(|a| a.get_id() == "batch"), "{}", entry.name);
        }
        command.debug_assert();
    }
}

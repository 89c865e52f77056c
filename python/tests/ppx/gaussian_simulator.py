"""A PPX simulator written for the tests with the message classes pyprob
ships (`pyprob.ppx`): a Gaussian with unknown mean.

    mu ~ Normal(0, 1);  obs_i ~ Normal(mu, SIGMA), i = 1..N

Its posterior is known in closed form: mu | obs ~ Normal(m, s^2) with
1/s^2 = 1 + N/SIGMA^2 and m = s^2 * sum(obs) / SIGMA^2 (conjugate normal
prior, e.g. Gelman et al., Bayesian Data Analysis, 3rd ed., Sec. 2.5).

It serves one system at a time over a ZeroMQ REP socket, as pyprob_cpp
simulators do: Run -> Sample(mu) -> Observe(obs, no value: the system
draws or conditions it) -> RunResult. With `--unknown-distribution` it
samples from a Weibull instead, which our traces cannot hold; with
`--die-mid-run` it exits after sending its first Sample.

usage: gaussian_simulator.py ADDRESS [--n N] [--sigma S] [--unknown-distribution] [--die-mid-run]
"""

import argparse
import importlib.util
import sys

import flatbuffers
import zmq

# pyprob's own `ppx` package of generated message classes, imported from
# pyprob's directory without running pyprob's __init__, which loads torch
# (14 s per simulator started; the messages need only flatbuffers).
sys.path.insert(0, importlib.util.find_spec("pyprob").submodule_search_locations[0])
from ppx import Distribution as D  # noqa: E402
from ppx import (  # noqa: E402
    HandshakeResult, Message, MessageBody, Normal, Observe, RunResult, Sample, SampleResult, Tensor, Weibull)


def tensor(builder, data, shape):
    Tensor.TensorStartDataVector(builder, len(data))
    for d in reversed(data):
        builder.PrependFloat64(d)
    data = builder.EndVector()
    Tensor.TensorStartShapeVector(builder, len(shape))
    for s in reversed(shape):
        builder.PrependInt32(s)
    shape = builder.EndVector()
    Tensor.TensorStart(builder)
    Tensor.TensorAddData(builder, data)
    Tensor.TensorAddShape(builder, shape)
    return Tensor.TensorEnd(builder)


def finish(builder, body_type, body):
    Message.MessageStart(builder)
    Message.MessageAddBodyType(builder, body_type)
    Message.MessageAddBody(builder, body)
    builder.Finish(Message.MessageEnd(builder))
    return bytes(builder.Output())


def normal(builder, mean, mean_shape, std):
    m = tensor(builder, mean, mean_shape)
    s = tensor(builder, [std], [])
    Normal.NormalStart(builder)
    Normal.NormalAddMean(builder, m)
    Normal.NormalAddStddev(builder, s)
    return Normal.NormalEnd(builder)


def weibull(builder):
    scale, concentration = tensor(builder, [1.0], []), tensor(builder, [2.0], [])
    Weibull.WeibullStart(builder)
    Weibull.WeibullAddScale(builder, scale)
    Weibull.WeibullAddConcentration(builder, concentration)
    return Weibull.WeibullEnd(builder)


def sample_message(unknown):
    builder = flatbuffers.Builder(256)
    address = builder.CreateString("mu")
    dist = weibull(builder) if unknown else normal(builder, [0.0], [], 1.0)
    Sample.SampleStart(builder)
    Sample.SampleAddAddress(builder, address)
    Sample.SampleAddDistributionType(builder, D.Distribution().Weibull if unknown else D.Distribution().Normal)
    Sample.SampleAddDistribution(builder, dist)
    Sample.SampleAddControl(builder, True)
    return finish(builder, MessageBody.MessageBody().Sample, Sample.SampleEnd(builder))


def observe_message(mu, n, sigma):
    builder = flatbuffers.Builder(256 + 8 * n)
    address = builder.CreateString("obs")
    name = builder.CreateString("obs")
    dist = normal(builder, [mu] * n, [n], sigma)
    Observe.ObserveStart(builder)
    Observe.ObserveAddAddress(builder, address)
    Observe.ObserveAddName(builder, name)
    Observe.ObserveAddDistributionType(builder, D.Distribution().Normal)
    Observe.ObserveAddDistribution(builder, dist)
    return finish(builder, MessageBody.MessageBody().Observe, Observe.ObserveEnd(builder))


def body(raw):
    message = Message.Message.GetRootAsMessage(raw, 0)
    return message.BodyType(), message.Body()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--sigma", type=float, default=2.0)
    parser.add_argument("--unknown-distribution", action="store_true")
    parser.add_argument("--die-mid-run", action="store_true")
    args = parser.parse_args()
    socket = zmq.Context.instance().socket(zmq.REP)
    socket.bind(args.address)
    print(f"gaussian simulator at {socket.getsockopt_string(zmq.LAST_ENDPOINT)}", flush=True)
    kinds = MessageBody.MessageBody()
    while True:
        kind, _ = body(socket.recv())
        if kind == kinds.Handshake:
            builder = flatbuffers.Builder(64)
            system, model = builder.CreateString("gaussian_simulator.py"), builder.CreateString("gaussian unknown mean")
            HandshakeResult.HandshakeResultStart(builder)
            HandshakeResult.HandshakeResultAddSystemName(builder, system)
            HandshakeResult.HandshakeResultAddModelName(builder, model)
            socket.send(finish(builder, kinds.HandshakeResult, HandshakeResult.HandshakeResultEnd(builder)))
        elif kind == kinds.Run:
            socket.send(sample_message(args.unknown_distribution))
            if args.die_mid_run:
                socket.close(linger=0)
                sys.exit(0)
            kind, table = body(socket.recv())
            if kind != kinds.SampleResult:
                sys.exit(f"expected SampleResult, got {kind}")
            result = SampleResult.SampleResult()
            result.Init(table.Bytes, table.Pos)
            mu = float(result.Result().DataAsNumpy()[0])
            socket.send(observe_message(mu, args.n, args.sigma))
            kind, _ = body(socket.recv())
            if kind != kinds.ObserveResult:
                sys.exit(f"expected ObserveResult, got {kind}")
            builder = flatbuffers.Builder(64)
            RunResult.RunResultStart(builder)
            socket.send(finish(builder, kinds.RunResult, RunResult.RunResultEnd(builder)))
        else:
            sys.exit(f"unexpected message {kind}")


if __name__ == "__main__":
    main()

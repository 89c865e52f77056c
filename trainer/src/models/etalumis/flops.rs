//! Multiply-adds of the inference network on one trace, from its layer
//! shapes ([`crate::flops`] for the conventions): the observation's
//! embedding once per trace, then per controlled choice the
//! LSTM's layers, the embedding of the choice's value and its address's
//! proposal head (the layers of [`net`](super::net)).

use super::EtalumisConfig;
use super::layout::{AddressLayer, Layout};
use super::observation::EmbeddingKind;
use super::proposal::head_width;
use crate::flops::{conv, dense, lstm_step};

/// The embedding's multiply-adds on one observation of `shape`: the CNN
/// (valid 3³ convolutions, pooling by 2 after the second and the fifth)
/// and its dense layer, or the three dense layers of the feed-forward one.
pub fn observation(config: &EtalumisConfig, shape: &[usize]) -> f64 {
    let out = config.observation_embedding;
    let volume = match EmbeddingKind::of(shape) {
        EmbeddingKind::Cnn(volume) => volume,
        EmbeddingKind::FeedForward(values) => {
            let hidden = (values + out) / 2;
            return dense(values, hidden) + dense(hidden, hidden) + dense(hidden, out);
        }
    };
    let (mut size, mut inputs, mut total) = (volume, 1, 0.0);
    for (i, &channels) in config.conv_channels.iter().enumerate() {
        size = size.map(|s| s.saturating_sub(2));
        total += conv(size.iter().product(), inputs, channels, 27);
        inputs = channels;
        if i == 1 || i == 4 {
            size = size.map(|s| s / 2);
        }
    }
    total + dense(inputs * size.iter().product::<usize>(), out)
}

/// One controlled choice at `layer`: the LSTM's layers, the value's
/// embedding and the proposal head.
pub fn choice(config: &EtalumisConfig, layer: &AddressLayer) -> f64 {
    let inputs = config.observation_embedding + config.sample_embedding + config.address_embedding;
    let hidden = config.lstm_hidden;
    let lstm = lstm_step(inputs, hidden) + (config.lstm_depth.max(1) - 1) as f64 * lstm_step(hidden, hidden);
    let values = if layer.kind.counted() { layer.outcomes } else { 1 };
    let width = head_width(layer, config.mixture_components);
    let middle = (hidden + width) / 2;
    lstm + dense(values, config.sample_embedding) + dense(hidden, middle) + dense(middle, width)
}

/// One trace visiting the layout positions `positions`.
pub fn trace(config: &EtalumisConfig, shape: &[usize], layout: &Layout, positions: &[usize]) -> f64 {
    let choices: f64 = positions.iter().filter_map(|&p| layout.addresses.get(p)).map(|l| choice(config, l)).sum();
    observation(config, shape) + choices
}

#[cfg(test)]
mod tests {
    use super::super::layout::Kind;
    use super::*;

    fn address(kind: Kind, outcomes: usize) -> AddressLayer {
        AddressLayer { address: "a".into(), kind, outcomes }
    }

    #[test]
    fn the_papers_cnn_counts_by_hand() {
        let config = super::super::paper();
        // 18·33·33 outputs of 1 → 64, 16·31·31 of 64 → 64, pool to
        // 8·15·15, 6·13·13 of 64 → 128, 4·11·11 and 2·9·9 of 128 → 128,
        // pool to 1·4·4, dense 128·16 → 256.
        let want =
            27.0 * (19602.0 * 64.0 + 15376.0 * 4096.0 + 1014.0 * 8192.0 + (484.0 + 162.0) * 16384.0) + 2048.0 * 256.0;
        assert_eq!(observation(&config, &[20, 35, 35]), want);
        // A vector of 16: 16 → 136 → 136 → 256.
        assert_eq!(observation(&config, &[16]), (16 * 136 + 136 * 136 + 136 * 256) as f64);
    }

    #[test]
    fn a_choice_counts_the_lstm_the_value_embedding_and_the_head() {
        let config = EtalumisConfig { lstm_depth: 2, ..super::super::paper() };
        let inputs = config.observation_embedding + config.sample_embedding + config.address_embedding;
        let h = config.lstm_hidden;
        let lstm = 4.0 * (inputs * h + h * h) as f64 + 4.0 * (2 * h * h) as f64;
        // A normal: one value in, 3 numbers per mixture component out.
        let width = 3 * config.mixture_components;
        let middle = (h + width) / 2;
        let normal = lstm + config.sample_embedding as f64 + (h * middle + middle * width) as f64;
        assert_eq!(choice(&config, &address(Kind::Normal, 0)), normal);
        // A categorical of 3: a one-hot value of 3 in, 3 scores out.
        let middle = (h + 3) / 2;
        let categorical = lstm + (3 * config.sample_embedding) as f64 + (h * middle + middle * 3) as f64;
        assert_eq!(choice(&config, &address(Kind::Categorical, 3)), categorical);
    }
}

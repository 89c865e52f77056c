//! One climate sample from a run's configuration and the sample's index:
//! the background from a few correlated random fields, then the features.
//!
//! Channels tied by physics share their randomness: sea-level pressure,
//! surface pressure and 1000 hPa height move together (the hypsometric
//! equation); the winds are geostrophic to the pressure anomaly (turning
//! the right way in each hemisphere, fading across the equator where the
//! Coriolis parameter vanishes) plus their own noise; the temperatures
//! share one anomaly, which also thickens the 1000-200 hPa layer; humidity
//! and precipitation follow the water vapour.

use super::channels::{CHANNELS, climatology, index};
use super::features::{Cyclone, LatLon, River};
use super::field::{Spectrum, random_field};
use crate::random::{Normals, mix};

/// A climate run, as the command line gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClimateConfig {
    /// Rows (latitudes).
    pub height: usize,
    /// Columns (longitudes).
    pub width: usize,
    /// Channels stored: the first this many of [`CHANNELS`].
    pub channels: usize,
    /// Tropical cyclones per sample, drawn uniformly in this range.
    pub cyclones: (usize, usize),
    /// Atmospheric rivers per sample, drawn uniformly in this range.
    pub rivers: (usize, usize),
    /// Run seed.
    pub seed: u64,
}

/// One sample: fields `(H, W, C)` and labels `(H, W)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClimateSample {
    /// Fields, channel-last.
    pub data: Vec<f32>,
    /// 0 background, 1 cyclone, 2 river.
    pub labels: Vec<i32>,
    /// The storms injected.
    pub cyclones: Vec<Cyclone>,
    /// The rivers injected.
    pub rivers: Vec<River>,
}

/// Cyclones per sample by default.
pub const DEFAULT_CYCLONES: (usize, usize) = (0, 4);
/// Rivers per sample by default.
pub const DEFAULT_RIVERS: (usize, usize) = (0, 3);

const PRESSURE: Spectrum = Spectrum { k0: 6.0, slope: 3.0 };
const MOISTURE: Spectrum = Spectrum { k0: 10.0, slope: 2.5 };
const TEMPERATURE: Spectrum = Spectrum { k0: 5.0, slope: 3.0 };
const WIND: Spectrum = Spectrum { k0: 12.0, slope: 3.0 };

/// Whether sample `index` is a validation sample: about `val_fraction` of
/// the samples, spread evenly over the indices (every fifth for 0.2).
pub fn is_validation(index: u64, val_fraction: f64) -> bool {
    ((index + 1) as f64 * val_fraction).floor() > (index as f64 * val_fraction).floor()
}

/// Where `simgen climate` writes sample `index`, relative to the dataset's
/// root: `train/data-000003.h5` or `validation/data-000004.h5`.
pub fn sample_path(index: u64, val_fraction: f64) -> String {
    let split = if is_validation(index, val_fraction) { "validation" } else { "train" };
    format!("{split}/data-{index:06}.h5")
}

impl ClimateConfig {
    /// Sample `index`.
    pub fn sample(&self, index_: u64) -> ClimateSample {
        let grid = LatLon { height: self.height, width: self.width };
        let (h, w) = (self.height, self.width);
        let field = |stream: u64, spectrum: Spectrum| random_field(h, w, spectrum, mix(self.seed, index_, stream));
        let pressure = field(10, PRESSURE);
        let moisture = field(11, MOISTURE);
        let temperature = field(12, TEMPERATURE);
        let (wind_u, wind_v) = (field(13, WIND), field(14, WIND));
        // Geostrophic wind of a unit pressure anomaly: the gradient per
        // pixel scaled so its typical size is 1 (a wavelength of about
        // width/k0 pixels has gradients near 2π k0 / width).
        let gradient_scale = w as f64 / (2.0 * std::f64::consts::PI * PRESSURE.k0);
        let mut data = vec![0f32; h * w * 16];
        let c = |name: &str| index(name).unwrap_or(0);
        let (tmq, u850, v850, ubot, vbot, qref) = (c("TMQ"), c("U850"), c("V850"), c("UBOT"), c("VBOT"), c("QREFHT"));
        let (ps, psl, t200, t500, prect, ts) = (c("PS"), c("PSL"), c("T200"), c("T500"), c("PRECT"), c("TS"));
        let (trefht, z1000, z200, zbot) = (c("TREFHT"), c("Z1000"), c("Z200"), c("ZBOT"));
        for y in 0..h {
            let lat = grid.lat(y);
            let clim: Vec<f64> = (0..16).map(|k| climatology(k, lat)).collect();
            // The Coriolis sign, fading to zero within 10° of the equator.
            let coriolis = lat.signum() * (lat.abs() / 10.0).min(1.0);
            for x in 0..w {
                let p = y * w + x;
                let at = |f: &[f32], yy: usize, xx: usize| f64::from(f[yy * w + xx]);
                let (xl, xr) = ((x + w - 1) % w, (x + 1) % w);
                let (yu, yd) = (y.saturating_sub(1), (y + 1).min(h - 1));
                let dpdx = (at(&pressure, y, xr) - at(&pressure, y, xl)) / 2.0 * gradient_scale;
                // Rows run southward: northward derivative is minus the row one.
                let dpdy = -(at(&pressure, yd, x) - at(&pressure, yu, x)) / ((yd - yu).max(1) as f64) * gradient_scale;
                let (pa, ma, ta) = (at(&pressure, y, x), at(&moisture, y, x), at(&temperature, y, x));
                let (nu, nv) = (at(&wind_u, y, x), at(&wind_v, y, x));
                let px = &mut data[p * 16..(p + 1) * 16];
                let noise = |k: usize| CHANNELS[k].noise;
                let psl_v = clim[psl] + noise(psl) * pa;
                px[psl] = psl_v as f32;
                px[ps] = (psl_v - 400.0 + 0.1 * noise(ps) * nu) as f32;
                px[z1000] = ((psl_v - 100_000.0) / 100.0 * 8.0) as f32;
                let (ug, vg) = (-dpdy * coriolis, dpdx * coriolis);
                px[u850] = (clim[u850] + noise(u850) * (0.8 * ug + 0.6 * nu)) as f32;
                px[v850] = (clim[v850] + noise(v850) * (0.8 * vg + 0.6 * nv)) as f32;
                px[ubot] = (clim[ubot] + noise(ubot) * (0.8 * ug + 0.6 * nu)) as f32;
                px[vbot] = (clim[vbot] + noise(vbot) * (0.8 * vg + 0.6 * nv)) as f32;
                px[t500] = (clim[t500] + noise(t500) * ta) as f32;
                px[t200] = (clim[t200] + noise(t200) * (0.6 * ta - 0.4 * pa)) as f32;
                px[ts] = (clim[ts] + noise(ts) * (0.8 * ta + 0.2 * ma)) as f32;
                px[trefht] = (clim[trefht] + noise(trefht) * (0.8 * ta + 0.2 * ma)) as f32;
                px[z200] = (clim[z200] + noise(z200) * (0.7 * ta + 0.3 * pa)) as f32;
                px[zbot] = (clim[zbot] + noise(zbot) * ta) as f32;
                // Water vapour varies most where there is most of it.
                let wet = clim[tmq] / 50.0;
                let tmq_v = (clim[tmq] * (1.0 + 0.35 * ma)).max(0.0) + noise(tmq) * 0.1 * wet * nu;
                px[tmq] = tmq_v.max(0.0) as f32;
                px[qref] = (clim[qref] * (1.0 + 0.3 * ma)).max(0.0) as f32;
                // Lognormal with a mean factor of 1: rain where it is moist.
                px[prect] = (clim[prect] * (1.2 * ma - 0.72).exp()) as f32;
            }
        }
        let mut labels = vec![super::features::BACKGROUND; h * w];
        let mut draw = Normals::new(mix(self.seed, index_, 20));
        let count = |range: (usize, usize), draw: &mut Normals| {
            range.0 + ((draw.uniform() * (range.1 - range.0 + 1) as f64) as usize).min(range.1 - range.0)
        };
        let uniform = |lo: f64, hi: f64, draw: &mut Normals| lo + (hi - lo) * draw.uniform();
        let mut cyclones = Vec::new();
        for _ in 0..count(self.cyclones, &mut draw) {
            let hemisphere = if draw.uniform() < 0.5 { 1.0 } else { -1.0 };
            let storm = Cyclone {
                lat: hemisphere * uniform(8.0, 25.0, &mut draw),
                lon: uniform(0.0, 360.0, &mut draw),
                deficit: uniform(2000.0, 7000.0, &mut draw),
                max_wind_radius: uniform(30.0, 80.0, &mut draw),
                shape: uniform(1.2, 2.0, &mut draw),
                radius: uniform(200.0, 350.0, &mut draw),
            };
            storm.inject(grid, &mut data, &mut labels);
            cyclones.push(storm);
        }
        let mut rivers = Vec::new();
        for _ in 0..count(self.rivers, &mut draw) {
            let hemisphere = if draw.uniform() < 0.5 { 1.0 } else { -1.0 };
            let (mut lat, mut lon) = (hemisphere * uniform(10.0, 20.0, &mut draw), uniform(0.0, 360.0, &mut draw));
            // Rivers leave the tropics poleward and eastward and turn east
            // into the mid-latitude storm track, where they run along the
            // jet toward a west coast (Ralph et al. 2018, their Fig. 1;
            // Zhu and Newell, Mon. Wea. Rev. 126, 725 (1998)). So the
            // heading (radians north of east, poleward positive) relaxes
            // from steep to nearly zonal as the axis reaches 35-55°, with a
            // slow meander.
            let mut heading = uniform(35.0, 65.0, &mut draw).to_radians();
            let track = uniform(35.0, 55.0, &mut draw);
            let zonal = uniform(-5.0, 15.0, &mut draw).to_radians();
            let length_km = uniform(5000.0, 9000.0, &mut draw);
            let step_km = 200.0;
            let km_per_degree = 6371.0 * std::f64::consts::PI / 180.0;
            let mut axis = vec![(lat, lon)];
            for _ in 0..(length_km / step_km) as usize {
                let target = if lat.abs() < track - 10.0 { heading } else { zonal };
                heading += 0.15 * (target - heading) + 0.04 * draw.normal();
                lat = (lat + hemisphere * step_km * heading.sin() / km_per_degree).clamp(-70.0, 70.0);
                lon += step_km * heading.cos() / (km_per_degree * lat.to_radians().cos());
                axis.push((lat, lon.rem_euclid(360.0)));
            }
            let river = River {
                axis,
                half_width: uniform(450.0, 750.0, &mut draw),
                moisture: uniform(15.0, 30.0, &mut draw),
                wind: uniform(10.0, 20.0, &mut draw),
            };
            river.inject(grid, &mut data, &mut labels);
            rivers.push(river);
        }
        for px in data.chunks_mut(16) {
            for (v, ch) in px.iter_mut().zip(&CHANNELS) {
                *v = ch.bounds.limit(f64::from(*v)) as f32;
            }
        }
        if self.channels < 16 {
            data = data.chunks(16).flat_map(|px| px[..self.channels].iter().copied()).collect();
        }
        ClimateSample { data, labels, cyclones, rivers }
    }
}

#[cfg(test)]
mod tests {
    use super::super::features::{BACKGROUND, CYCLONE, RIVER};
    use super::*;

    #[test]
    fn validation_samples_are_spread_evenly_at_the_fraction_asked() {
        let every_fifth: Vec<u64> = (0..20).filter(|&i| is_validation(i, 0.2)).collect();
        assert_eq!(every_fifth, vec![4, 9, 14, 19]);
        assert_eq!((0..1000).filter(|&i| is_validation(i, 0.1)).count(), 100);
        assert!((0..1000).all(|i| !is_validation(i, 0.0)));
        assert_eq!(sample_path(9, 0.2), "validation/data-000009.h5");
        assert_eq!(sample_path(3, 0.2), "train/data-000003.h5");
    }

    fn small() -> ClimateConfig {
        ClimateConfig { height: 192, width: 288, channels: 16, cyclones: (2, 2), rivers: (2, 2), seed: 4 }
    }

    #[test]
    fn samples_are_reproducible_and_hold_their_features() {
        let config = small();
        let a = config.sample(3);
        assert_eq!(a, config.sample(3));
        assert_ne!(a.data, config.sample(4).data);
        assert_eq!((a.cyclones.len(), a.rivers.len()), (2, 2));
        let count = |class| a.labels.iter().filter(|&&l| l == class).count();
        assert!(count(CYCLONE) > 0 && count(RIVER) > count(CYCLONE) && count(BACKGROUND) > 9 * a.labels.len() / 10);
        assert!(a.data.iter().all(|v| v.is_finite()));
    }

    /// Every channel of many storm-laden samples stays within the observed
    /// extremes of `bounds`, while the moist tail still reaches far into
    /// them (before the bounds, precipitable water reached 130 kg/m²).
    #[test]
    fn every_channel_stays_within_its_observed_extremes_over_many_samples() {
        let config = ClimateConfig { cyclones: (4, 4), rivers: (4, 4), ..small() };
        let mut range = [(f64::INFINITY, f64::NEG_INFINITY); 16];
        for index in 0..40 {
            for px in config.sample(index).data.chunks(16) {
                for (r, &v) in range.iter_mut().zip(px) {
                    *r = (r.0.min(f64::from(v)), r.1.max(f64::from(v)));
                }
            }
        }
        for (channel, (low, high)) in CHANNELS.iter().zip(range) {
            // f32 rounding of a value pressed onto its bound.
            let slack = 1e-6 * channel.bounds.high.abs().max(channel.bounds.low.abs());
            assert!(
                low >= channel.bounds.low - slack && high <= channel.bounds.high + slack,
                "{}: {low}..{high} against {:?}",
                channel.name,
                channel.bounds
            );
        }
        let tmq = range[index("TMQ").unwrap()];
        assert!(tmq.1 > 60.0, "the moist tail is still there: TMQ reaches {}", tmq.1);
    }

    /// A cyclone's centre is the lowest sea-level pressure around it.
    #[test]
    fn each_cyclone_centre_is_a_pressure_minimum() {
        let config = small();
        let s = config.sample(7);
        let grid = LatLon { height: config.height, width: config.width };
        let psl = index("PSL").unwrap();
        for storm in &s.cyclones {
            let (cy, cx) = (grid.row(storm.lat), grid.column(storm.lon));
            let at = |y: usize, x: usize| s.data[(y * config.width + x % config.width) * 16 + psl];
            let centre = at(cy, cx);
            for dy in -4i64..=4 {
                for dx in -4i64..=4 {
                    let (y, x) = ((cy as i64 + dy) as usize, (cx as i64 + dx + config.width as i64) as usize);
                    if dy.abs().max(dx.abs()) >= 3 {
                        assert!(at(y, x) > centre, "({dy}, {dx}) is lower than the centre of {storm:?}");
                    }
                }
            }
        }
    }

    /// Under the default counts the classes come out near the paper's
    /// (Kurth et al. 2018: about 98.2 % background, 1.7 % river, under
    /// 0.1 % cyclone).
    #[test]
    fn default_settings_give_the_papers_class_frequencies() {
        let config = ClimateConfig {
            height: 192,
            width: 288,
            channels: 1,
            cyclones: DEFAULT_CYCLONES,
            rivers: DEFAULT_RIVERS,
            seed: 11,
        };
        let mut counts = [0usize; 3];
        for i in 0..60 {
            for l in config.sample(i).labels {
                counts[l as usize] += 1;
            }
        }
        let total = counts.iter().sum::<usize>() as f64;
        let f: Vec<f64> = counts.iter().map(|&c| c as f64 / total).collect();
        eprintln!("class frequencies {f:?}");
        assert!((0.975..0.99).contains(&f[0]), "{f:?}");
        assert!((0.012..0.023).contains(&f[2]), "{f:?}");
        assert!(f[1] > 0.0002 && f[1] < 0.001, "{f:?}");
    }

    #[test]
    fn fewer_channels_keep_the_first_ones() {
        let mut config = small();
        let all = config.sample(1);
        config.channels = 4;
        let some = config.sample(1);
        assert_eq!(some.data.len(), 192 * 288 * 4);
        for (p, px) in some.data.chunks(4).enumerate() {
            assert_eq!(px, &all.data[p * 16..p * 16 + 4]);
        }
    }
}

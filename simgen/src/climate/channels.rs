//! The 16 channels of a climate sample: the CAM5 variables the DeepCAM
//! data holds (the ClimateNet set: K. Kashinath et al., "ClimateNet: an
//! expert-labeled open dataset and deep learning architecture for enabling
//! high-precision analyses of extreme weather", Geosci. Model Dev. 14, 107
//! (2021), Table 1), in that order, each with its units and the zonal-mean
//! climatology the background is built around.
//!
//! The climatologies are smooth functions of latitude with the features a
//! climate scientist checks first (warm moist tropics, cold dry poles, the
//! cold tropical tropopause, subtropical highs and subpolar lows, trade
//! winds and mid-latitude westerly jets). The shapes follow the observed
//! annual zonal means (J. P. Peixoto and A. H. Oort, *Physics of Climate*,
//! AIP 1992); the amplitudes are our round numbers near them, not fitted
//! values.

use super::bounds::{self, Bounds};

/// One channel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Channel {
    /// CAM5 variable name (the name in the file's attributes).
    pub name: &'static str,
    /// What it is.
    pub long_name: &'static str,
    /// Units.
    pub units: &'static str,
    /// Standard deviation of the random background around the climatology.
    pub noise: f64,
    /// The range its values are kept in ([`super::bounds`], with sources).
    pub bounds: Bounds,
}

/// The channels, in the order they are stored.
pub const CHANNELS: [Channel; 16] = [
    Channel {
        name: "TMQ",
        long_name: "total (vertically integrated) precipitable water",
        units: "kg/m^2",
        noise: 6.0,
        bounds: bounds::PRECIPITABLE_WATER,
    },
    Channel { name: "U850", long_name: "zonal wind at 850 hPa", units: "m/s", noise: 5.0, bounds: bounds::WIND },
    Channel { name: "V850", long_name: "meridional wind at 850 hPa", units: "m/s", noise: 5.0, bounds: bounds::WIND },
    Channel {
        name: "UBOT",
        long_name: "zonal wind at the lowest model level",
        units: "m/s",
        noise: 4.0,
        bounds: bounds::WIND,
    },
    Channel {
        name: "VBOT",
        long_name: "meridional wind at the lowest model level",
        units: "m/s",
        noise: 4.0,
        bounds: bounds::WIND,
    },
    Channel {
        name: "QREFHT",
        long_name: "specific humidity at reference height (2 m)",
        units: "kg/kg",
        noise: 0.0015,
        bounds: bounds::SPECIFIC_HUMIDITY,
    },
    Channel { name: "PS", long_name: "surface pressure", units: "Pa", noise: 700.0, bounds: bounds::SURFACE_PRESSURE },
    Channel {
        name: "PSL",
        long_name: "sea-level pressure",
        units: "Pa",
        noise: 700.0,
        bounds: bounds::SEA_LEVEL_PRESSURE,
    },
    Channel { name: "T200", long_name: "temperature at 200 hPa", units: "K", noise: 2.0, bounds: bounds::TEMPERATURE },
    Channel { name: "T500", long_name: "temperature at 500 hPa", units: "K", noise: 2.5, bounds: bounds::TEMPERATURE },
    Channel {
        name: "PRECT",
        long_name: "total precipitation rate",
        units: "m/s",
        noise: 0.0,
        bounds: bounds::PRECIPITATION,
    },
    Channel { name: "TS", long_name: "surface temperature", units: "K", noise: 2.5, bounds: bounds::TEMPERATURE },
    Channel {
        name: "TREFHT",
        long_name: "temperature at reference height (2 m)",
        units: "K",
        noise: 2.5,
        bounds: bounds::TEMPERATURE,
    },
    Channel {
        name: "Z1000",
        long_name: "geopotential height at 1000 hPa",
        units: "m",
        noise: 50.0,
        bounds: bounds::HEIGHT_1000,
    },
    Channel {
        name: "Z200",
        long_name: "geopotential height at 200 hPa",
        units: "m",
        noise: 80.0,
        bounds: bounds::HEIGHT_200,
    },
    Channel {
        name: "ZBOT",
        long_name: "height of the lowest model level",
        units: "m",
        noise: 3.0,
        bounds: bounds::HEIGHT_BOTTOM,
    },
];

/// Index of a channel by name.
pub fn index(name: &str) -> Option<usize> {
    CHANNELS.iter().position(|c| c.name == name)
}

/// Zonal-mean climatology of channel `c` at latitude `lat` (degrees).
/// Winds: trades of -6 m/s at the equator, westerly jets of 12 m/s (850
/// hPa) at ±45°; sea-level pressure: subtropical highs of 1020 hPa at ±30°
/// and subpolar lows of 990 hPa at ±60°; temperatures falling from the
/// tropics to the poles, but for the tropopause at 200 hPa, coldest over
/// the equator.
pub fn climatology(c: usize, lat: f64) -> f64 {
    let phi = lat.to_radians();
    let (c2, s2) = (phi.cos().powi(2), phi.sin().powi(2));
    let bump = |centre: f64, width: f64| (-((lat.abs() - centre) / width).powi(2)).exp();
    let jet = 12.0 * bump(45.0, 12.0) - 6.0 * bump(0.0, 15.0);
    let psl = 101_000.0 + 1_000.0 * bump(30.0, 10.0) - 2_000.0 * bump(60.0, 10.0);
    match CHANNELS[c].name {
        "TMQ" => 4.0 + 46.0 * bump(0.0, 25.0),
        "U850" => jet,
        "UBOT" => 0.7 * jet,
        "V850" | "VBOT" => 0.0,
        "QREFHT" => 0.001 + 0.017 * bump(0.0, 28.0),
        "PSL" => psl,
        // No orography: the surface is at sea level less the lowest layer.
        "PS" => psl - 400.0,
        "T200" => 213.0 + 10.0 * s2,
        "T500" => 233.0 + 35.0 * c2,
        "PRECT" => 1.0e-8 + 8.0e-8 * bump(5.0, 10.0),
        "TS" => 246.0 + 55.0 * c2,
        "TREFHT" => 245.0 + 54.0 * c2,
        // The hypsometric link to sea-level pressure: 8 m per hPa above 1000 hPa.
        "Z1000" => (psl - 100_000.0) / 100.0 * 8.0,
        "Z200" => 11_000.0 + 1_400.0 * c2,
        "ZBOT" => 61.0,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_distinct_channels_with_units() {
        for (i, c) in CHANNELS.iter().enumerate() {
            assert_eq!(index(c.name), Some(i));
            assert!(!c.units.is_empty() && !c.long_name.is_empty());
        }
        // The previews draw channel 0 as water vapour on any --channels.
        assert_eq!(CHANNELS[0].name, "TMQ");
    }

    /// What a climate scientist checks first.
    #[test]
    fn the_climatology_has_warm_moist_tropics_and_westerly_jets() {
        let at = |name: &str, lat: f64| climatology(index(name).unwrap(), lat);
        assert!(at("TS", 0.0) > 295.0 && at("TS", 85.0) < 255.0);
        assert!(at("TMQ", 0.0) > 40.0 && at("TMQ", 75.0) < 10.0);
        assert!(at("U850", 45.0) > 10.0 && at("U850", -45.0) > 10.0 && at("U850", 0.0) < -4.0);
        assert!(at("PSL", 30.0) > at("PSL", 0.0) && at("PSL", 60.0) < 100_000.0);
        assert!(at("T200", 0.0) < at("T200", 60.0), "the tropical tropopause is the coldest");
        for lat in [-90.0, -30.0, 0.0, 30.0, 90.0] {
            for (c, channel) in CHANNELS.iter().enumerate() {
                assert!(climatology(c, lat).is_finite());
                assert!(channel.bounds.contains(climatology(c, lat)), "{} at {lat}", channel.name);
            }
        }
    }
}

//! Where each channel's values must stay: the extremes observed on Earth,
//! or what follows from them, so no sample holds weather that never was
//! (precipitable water of 130 kg/m² did, before these bounds).
//!
//! Observed extremes are the WMO World Weather and Climate Extremes
//! Archive's (World Meteorological Organization, https://wmo.asu.edu):
//! highest air temperature 56.7 °C (Furnace Creek, 10 July 1913), lowest
//! -89.2 °C (Vostok, 21 July 1983); lowest sea-level pressure 870 hPa
//! (Typhoon Tip, 12 October 1979), highest 1084.8 hPa (Tosontsengel,
//! 19 December 2001); strongest surface gust 113.2 m/s (Barrow Island,
//! 10 April 1996); most rain in 60 minutes 305 mm (Holt, Missouri, 22 June
//! 1947).

/// The range a channel's values are kept in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Lowest value.
    pub low: f64,
    /// Highest value.
    pub high: f64,
    /// The low bound is a physical zero the field reaches (no rain, dry
    /// air), kept by clamping; other bounds are approached smoothly.
    pub zero_floor: bool,
}

const KELVIN: f64 = 273.15;
/// WMO's highest and lowest air temperatures, K.
pub const TEMPERATURE: Bounds = Bounds { low: KELVIN - 89.2, high: KELVIN + 56.7, zero_floor: false };
/// WMO's lowest and highest sea-level pressures, Pa.
pub const SEA_LEVEL_PRESSURE: Bounds = Bounds { low: 87_000.0, high: 108_480.0, zero_floor: false };
/// Surface pressure: simgen has no orography (PS = PSL - 400 Pa).
pub const SURFACE_PRESSURE: Bounds = Bounds { low: 87_000.0 - 400.0, high: 108_480.0 - 400.0, zero_floor: false };
/// WMO's strongest surface gust, m/s, either way: no sustained wind of
/// the lower troposphere has exceeded it.
pub const WIND: Bounds = Bounds { low: -113.2, high: 113.2, zero_floor: false };
/// WMO's 60-minute rainfall record as a rate, m/s (0.305 m / 3600 s).
pub const PRECIPITATION: Bounds = Bounds { low: 0.0, high: 0.305 / 3600.0, zero_floor: true };
/// Saturation specific humidity at the highest dew point reported, 35 °C
/// (Dhahran, 8 July 2003): Bolton's e_s = 6.112 exp(17.67 T / (T + 243.5))
/// hPa (Mon. Wea. Rev. 108, 1046 (1980), eq. 10) gives 56.3 hPa, and
/// q = 0.622 e / (p - 0.378 e) at 1013.25 hPa gives 0.0353 kg/kg.
pub const SPECIFIC_HUMIDITY: Bounds = Bounds { low: 0.0, high: 0.0353, zero_floor: true };
/// A column saturated at that dew point over water vapour's scale height
/// of about 2 km: ρ_v = e / (R_v T) = 5630 / (461.5 × 308.15) = 0.0396
/// kg/m³, times 2000 m, 79 kg/m²; the moistest columns retrieved from
/// satellites, over the west Pacific warm pool, reach about 75.
pub const PRECIPITABLE_WATER: Bounds = Bounds { low: 0.0, high: 80.0, zero_floor: true };

/// R_d / g (m/K): the hypsometric equation's scale, Z2 - Z1 = (R_d T / g)
/// ln(p1 / p2) (Wallace & Hobbs, Atmospheric Science, 2nd ed. 2006, eq.
/// 3.29), R_d = 287.05 J/(kg K), g = 9.80665 m/s².
const HYPSOMETRIC: f64 = 287.05 / 9.80665;

/// Height of a pressure level above the surface with every layer at the
/// coldest or warmest observed temperature, from the surface pressure's
/// observed extremes.
const fn hypsometric(low_ln_ratio: f64, high_ln_ratio: f64) -> Bounds {
    Bounds {
        low: HYPSOMETRIC * TEMPERATURE.low * low_ln_ratio,
        high: HYPSOMETRIC * TEMPERATURE.high * high_ln_ratio,
        zero_floor: false,
    }
}

/// Z200: ln(870/200) = 1.4702 to ln(1084.8/200) = 1.6908.
pub const HEIGHT_200: Bounds = hypsometric(1.4702, 1.6908);
/// ZBOT, the lowest level of CAM5's hybrid grid at 0.99249 of the surface
/// pressure (hyam + hybm of its 30 levels): ln(1/0.99249) = 0.0075383.
pub const HEIGHT_BOTTOM: Bounds = hypsometric(0.0075383, 0.0075383);
/// Z1000, tied to sea-level pressure at 8 m per hPa (as the generator does).
pub const HEIGHT_1000: Bounds =
    Bounds { low: (870.0 - 1000.0) * 8.0, high: (1084.8 - 1000.0) * 8.0, zero_floor: false };

impl Bounds {
    /// `value` kept inside the bounds: unchanged away from them, and within
    /// a twentieth of the range of a bound pressed smoothly (tanh) toward
    /// it, never past, so no values pile up on the bound itself. A zero
    /// floor clamps.
    pub fn limit(&self, value: f64) -> f64 {
        let margin = 0.05 * (self.high - self.low);
        let (soft_low, soft_high) = (self.low + margin, self.high - margin);
        if value > soft_high {
            soft_high + margin * ((value - soft_high) / margin).tanh()
        } else if self.zero_floor {
            value.max(self.low)
        } else if value < soft_low {
            soft_low - margin * ((soft_low - value) / margin).tanh()
        } else {
            value
        }
    }

    /// Whether `value` is inside.
    pub fn contains(&self, value: f64) -> bool {
        (self.low..=self.high).contains(&value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_leaves_the_middle_alone_and_never_crosses_a_bound() {
        let b = TEMPERATURE;
        for v in [200.0, 250.0, 300.0, 310.0] {
            assert_eq!(b.limit(v), v);
        }
        let mut previous = f64::NEG_INFINITY;
        for i in 0..=4000 {
            let v = -1000.0 + i as f64 * 0.5;
            let limited = b.limit(v);
            assert!(b.contains(limited), "{v} -> {limited}");
            assert!(limited >= previous, "limit keeps the order: {v}");
            previous = limited;
        }
        assert_eq!(PRECIPITATION.limit(-1e-9), 0.0);
        assert!(PRECIPITATION.limit(1.0) <= PRECIPITATION.high);
    }

    #[test]
    fn derived_bounds_follow_from_the_observed_extremes() {
        // Bolton's saturation vapour pressure at 35 °C.
        let e = 6.112 * (17.67 * 35.0 / (35.0 + 243.5f64)).exp();
        assert!((e - 56.3).abs() < 0.1, "{e}");
        let q = 0.622 * e / (1013.25 - 0.378 * e);
        assert!((q - SPECIFIC_HUMIDITY.high).abs() < 1e-4, "{q}");
        assert!((1.4702 - (870.0f64 / 200.0).ln()).abs() < 1e-4);
        assert!((1.6908 - (1084.8f64 / 200.0).ln()).abs() < 1e-4);
    }
}

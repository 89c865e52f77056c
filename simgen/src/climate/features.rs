//! Extreme-weather features injected into a background, and their labels:
//! tropical cyclones (class 1) and atmospheric rivers (class 2), the
//! MLPerf DeepCAM class order.
//!
//! Every anomaly is multiplied by a taper that is exactly zero outside the
//! feature's mask, so the labels cover exactly the pixels a feature
//! changed.

use super::channels::index;

/// Mean Earth radius, km.
const EARTH_KM: f64 = 6371.0;
/// Air density near the surface, kg/m³, for the cyclone's gradient wind.
const AIR_DENSITY: f64 = 1.15;

/// Label of a pixel.
pub const BACKGROUND: i32 = 0;
/// Label of a tropical-cyclone pixel.
pub const CYCLONE: i32 = 1;
/// Label of an atmospheric-river pixel.
pub const RIVER: i32 = 2;

/// A longitude-latitude grid: row 0 at 90° N, column 0 at 0° E, pixel
/// centres at half steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatLon {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
}

impl LatLon {
    /// Latitude of row `y`, degrees.
    pub fn lat(&self, y: usize) -> f64 {
        90.0 - (y as f64 + 0.5) * 180.0 / self.height as f64
    }

    /// Longitude of column `x`, degrees.
    pub fn lon(&self, x: usize) -> f64 {
        (x as f64 + 0.5) * 360.0 / self.width as f64
    }

    /// Row nearest to latitude `lat`.
    pub fn row(&self, lat: f64) -> usize {
        (((90.0 - lat) * self.height as f64 / 180.0) as usize).min(self.height - 1)
    }

    /// Column nearest to longitude `lon` (any value; wraps).
    pub fn column(&self, lon: f64) -> usize {
        ((lon.rem_euclid(360.0) * self.width as f64 / 360.0) as usize).min(self.width - 1)
    }

    /// Kilometres east and north from (`lat0`, `lon0`) to (`lat`, `lon`) on
    /// the plane tangent at the first point (the short way round in
    /// longitude).
    pub fn offset_km(lat0: f64, lon0: f64, lat: f64, lon: f64) -> (f64, f64) {
        let dlon = (lon - lon0 + 180.0).rem_euclid(360.0) - 180.0;
        let km_per_degree = EARTH_KM * std::f64::consts::PI / 180.0;
        (dlon * km_per_degree * lat0.to_radians().cos(), (lat - lat0) * km_per_degree)
    }

    /// Rows and columns spanned by a disc of `radius_km` around a point,
    /// generously: the features test every pixel in it exactly.
    fn window(&self, lat: f64, lon: f64, radius_km: f64) -> (std::ops::Range<usize>, Vec<usize>) {
        let km_per_degree = EARTH_KM * std::f64::consts::PI / 180.0;
        let dlat = radius_km / km_per_degree + 1.0;
        let rows = self.row((lat + dlat).min(90.0))..self.row((lat - dlat).max(-90.0)) + 1;
        let cos = lat.abs().min(85.0).to_radians().cos().max((lat.abs() + dlat).min(89.0).to_radians().cos());
        let dlon = (radius_km / (km_per_degree * cos) + 1.0).min(180.0);
        let (first, last) = (self.column(lon - dlon), self.column(lon + dlon));
        let span = (last + self.width - first) % self.width + 1;
        let columns = if dlon >= 180.0 {
            (0..self.width).collect()
        } else {
            (0..span).map(|i| (first + i) % self.width).collect()
        };
        (rows, columns)
    }
}

/// (1 - s²)² inside s < 1, zero outside: smooth at the edge, exactly zero
/// beyond it.
fn taper(s: f64) -> f64 {
    if s < 1.0 { (1.0 - s * s).powi(2) } else { 0.0 }
}

/// A tropical cyclone: Holland's parametric vortex (G. J. Holland, Mon.
/// Wea. Rev. 108, 1212 (1980)): pressure p(r) = p_c + Δp exp(-(R_max/r)^B)
/// and the cyclostrophic gradient wind v(r)² = (B Δp / ρ) (R_max/r)^B
/// exp(-(R_max/r)^B); cyclonic rotation (counter-clockwise in the northern
/// hemisphere, clockwise in the southern), a warm core aloft, and moist,
/// raining air in the core.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cyclone {
    /// Centre latitude, degrees.
    pub lat: f64,
    /// Centre longitude, degrees.
    pub lon: f64,
    /// Central pressure deficit Δp, Pa.
    pub deficit: f64,
    /// Radius of maximum wind, km.
    pub max_wind_radius: f64,
    /// Holland's shape parameter B (1 to 2.5).
    pub shape: f64,
    /// Radius of the storm (and its label), km.
    pub radius: f64,
}

impl Cyclone {
    /// Pressure deficit (positive) at `r` km from the centre, before the taper.
    pub fn deficit_at(&self, r: f64) -> f64 {
        if r <= 0.0 {
            return self.deficit;
        }
        self.deficit * (1.0 - (-(self.max_wind_radius / r).powf(self.shape)).exp())
    }

    /// Gradient wind speed at `r` km, m/s, before the taper.
    pub fn wind_at(&self, r: f64) -> f64 {
        if r <= 0.0 {
            return 0.0;
        }
        let a = (self.max_wind_radius / r).powf(self.shape);
        (self.shape * self.deficit / AIR_DENSITY * a * (-a).exp()).sqrt()
    }

    /// Add the storm to `data` (`height × width × 16`, channel-last) and
    /// label its pixels.
    pub fn inject(&self, grid: LatLon, data: &mut [f32], labels: &mut [i32]) {
        let spin = if self.lat >= 0.0 { 1.0 } else { -1.0 };
        let (rows, columns) = grid.window(self.lat, self.lon, self.radius);
        for y in rows {
            for &x in &columns {
                let (east, north) = LatLon::offset_km(self.lat, self.lon, grid.lat(y), grid.lon(x));
                let r = east.hypot(north);
                let t = taper(r / self.radius);
                if t == 0.0 {
                    continue;
                }
                let p = y * grid.width + x;
                labels[p] = CYCLONE;
                let pixel = &mut data[p * 16..(p + 1) * 16];
                let dp = (self.deficit_at(r) * t) as f32;
                let v = self.wind_at(r) * t;
                // Tangential: rotate the outward unit vector a quarter turn.
                let (u, w) = if r > 0.0 { (-north / r * v * spin, east / r * v * spin) } else { (0.0, 0.0) };
                let core = taper(r / (2.5 * self.max_wind_radius).min(self.radius)) as f32;
                add(pixel, "PSL", -dp);
                add(pixel, "PS", -dp);
                add(pixel, "Z1000", -dp / 100.0 * 8.0);
                add(pixel, "U850", u as f32);
                add(pixel, "V850", w as f32);
                add(pixel, "UBOT", 0.85 * u as f32);
                add(pixel, "VBOT", 0.85 * w as f32);
                add(pixel, "T500", 6.0 * core);
                add(pixel, "T200", 3.0 * core);
                add(pixel, "TMQ", 25.0 * t as f32);
                add(pixel, "QREFHT", 0.004 * t as f32);
                add(pixel, "PRECT", 3.0e-6 * core.max(0.2 * t as f32));
            }
        }
    }
}

/// An atmospheric river: a long, narrow filament of water vapour from the
/// tropics poleward, with wind along it (F. M. Ralph et al., Bull. Amer.
/// Meteor. Soc. 99, 837 (2018), the AMS glossary definition: long, narrow,
/// transient corridors of strong horizontal water-vapour transport).
#[derive(Debug, Clone, PartialEq)]
pub struct River {
    /// Points along its axis (latitude, longitude), degrees, from the
    /// tropical end.
    pub axis: Vec<(f64, f64)>,
    /// Half width at the middle of the axis, km; see [`River::width_at`].
    pub half_width: f64,
    /// Water-vapour excess on the axis, kg/m².
    pub moisture: f64,
    /// Wind along the axis, m/s.
    pub wind: f64,
}

impl River {
    /// Half width, km, at `along` (0 at the tropical end, 1 at the far
    /// end): widest in the middle and narrowing to a third at the ends, the
    /// spindle an atmospheric river has in water-vapour maps (Ralph et al.
    /// 2018, their Fig. 1), rather than a band of constant width.
    pub fn width_at(&self, along: f64) -> f64 {
        self.half_width * (0.3 + 0.7 * (std::f64::consts::PI * along.clamp(0.0, 1.0)).sin().sqrt())
    }

    /// Add the river to `data` and label its pixels (a river never relabels
    /// a cyclone: the storm keeps its pixels).
    pub fn inject(&self, grid: LatLon, data: &mut [f32], labels: &mut [i32]) {
        let n = self.axis.len();
        if n < 2 {
            return;
        }
        let mut best: std::collections::HashMap<usize, (f64, f64, f64, f64)> = std::collections::HashMap::new();
        for k in 0..n - 1 {
            let (a, b) = (self.axis[k], self.axis[k + 1]);
            let (lat, lon) = ((a.0 + b.0) / 2.0, a.1 + ((b.1 - a.1 + 180.0).rem_euclid(360.0) - 180.0) / 2.0);
            let (seg_e, seg_n) = LatLon::offset_km(lat, lon, b.0, b.1);
            let (seg_e0, seg_n0) = LatLon::offset_km(lat, lon, a.0, a.1);
            let (dx, dy) = (seg_e - seg_e0, seg_n - seg_n0);
            let length = dx.hypot(dy).max(1e-9);
            let reach = length / 2.0 + self.half_width;
            let (rows, columns) = grid.window(lat, lon, reach);
            for y in rows {
                for &x in &columns {
                    let (e, no) = LatLon::offset_km(lat, lon, grid.lat(y), grid.lon(x));
                    // Distance to the segment, and where along the whole axis.
                    let t = (((e - seg_e0) * dx + (no - seg_n0) * dy) / (length * length)).clamp(0.0, 1.0);
                    let d = (e - seg_e0 - t * dx).hypot(no - seg_n0 - t * dy);
                    let along = (k as f64 + t) / (n - 1) as f64;
                    // Distance in units of the local half width: the pixel
                    // belongs to the segment it is deepest inside.
                    let depth = d / self.width_at(along);
                    let p = y * grid.width + x;
                    if depth < 1.0 && best.get(&p).is_none_or(|b| depth < b.0) {
                        best.insert(p, (depth, along, dx / length, dy / length));
                    }
                }
            }
        }
        for (p, (depth, along, ux, uy)) in best {
            if labels[p] == CYCLONE {
                continue;
            }
            // Fade over the last twentieth at each end, so the ends are smooth too.
            let ends = (along / 0.05).min((1.0 - along) / 0.05).min(1.0);
            let t = taper(depth) * ends;
            if t == 0.0 {
                continue;
            }
            labels[p] = RIVER;
            let pixel = &mut data[p * 16..(p + 1) * 16];
            let v = self.wind * t;
            add(pixel, "TMQ", (self.moisture * t) as f32);
            add(pixel, "QREFHT", (0.003 * t) as f32);
            add(pixel, "U850", (v * ux) as f32);
            add(pixel, "V850", (v * uy) as f32);
            add(pixel, "UBOT", (0.6 * v * ux) as f32);
            add(pixel, "VBOT", (0.6 * v * uy) as f32);
            add(pixel, "PRECT", (6.0e-7 * t) as f32);
        }
    }
}

fn add(pixel: &mut [f32], name: &str, value: f32) {
    if let Some(c) = index(name) {
        pixel[c] += value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> LatLon {
        LatLon { height: 192, width: 288 }
    }

    /// The pressure minimum at the centre; winds counter-clockwise north
    /// of the equator and clockwise south of it; labels exactly where the
    /// fields changed.
    #[test]
    fn a_cyclone_has_its_low_at_the_centre_and_turns_the_right_way() {
        let g = grid();
        for lat in [17.0, -17.0] {
            let storm = Cyclone { lat, lon: 100.0, deficit: 4000.0, max_wind_radius: 60.0, shape: 1.5, radius: 600.0 };
            let mut data = vec![0f32; g.height * g.width * 16];
            let mut labels = vec![BACKGROUND; g.height * g.width];
            storm.inject(g, &mut data, &mut labels);
            let psl = index("PSL").unwrap();
            let lowest =
                (0..g.height * g.width).min_by(|&a, &b| data[a * 16 + psl].total_cmp(&data[b * 16 + psl])).unwrap();
            let (cy, cx) = (g.row(lat), g.column(100.0));
            assert!((lowest / g.width).abs_diff(cy) <= 1 && (lowest % g.width).abs_diff(cx) <= 1, "low at {lowest}");
            // East of the centre the wind blows north in the north, south in the south.
            let east = cy * g.width + g.column(103.0);
            let v = data[east * 16 + index("V850").unwrap()];
            assert!(if lat > 0.0 { v > 5.0 } else { v < -5.0 }, "lat {lat}: v east of centre {v}");
            for p in 0..g.height * g.width {
                let changed = data[p * 16..(p + 1) * 16].iter().any(|&v| v != 0.0);
                assert_eq!(changed, labels[p] == CYCLONE, "pixel {p}");
            }
        }
    }

    #[test]
    fn a_river_labels_exactly_the_pixels_it_moistens_and_spares_cyclones() {
        let g = grid();
        let river = River {
            axis: (0..10).map(|i| (15.0 + 4.0 * i as f64, 350.0 + 3.0 * i as f64)).collect(),
            half_width: 400.0,
            moisture: 25.0,
            wind: 15.0,
        };
        let mut data = vec![0f32; g.height * g.width * 16];
        let mut labels = vec![BACKGROUND; g.height * g.width];
        let storm =
            Cyclone { lat: 27.0, lon: 357.0, deficit: 3000.0, max_wind_radius: 50.0, shape: 1.5, radius: 300.0 };
        storm.inject(g, &mut data, &mut labels);
        let before: Vec<i32> = labels.clone();
        river.inject(g, &mut data, &mut labels);
        let tmq = index("TMQ").unwrap();
        let rivers = labels.iter().filter(|&&l| l == RIVER).count();
        assert!(rivers > 100, "{rivers} river pixels");
        for p in 0..labels.len() {
            if before[p] == CYCLONE {
                assert_eq!(labels[p], CYCLONE, "a river took a cyclone's pixel");
            } else {
                assert_eq!(data[p * 16 + tmq] != 0.0, labels[p] == RIVER, "pixel {p}");
            }
        }
        // It wraps across 0° E without a seam: pixels both sides are labelled.
        let row = g.row(27.0);
        assert!(
            labels[row * g.width + g.column(359.0)] != BACKGROUND
                && labels[row * g.width + g.column(1.0)] != BACKGROUND
        );
    }
}

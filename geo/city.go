package geo

import "math"

// City is a named place on Earth. GeoNames cities carry an ISO 3166 country
// code in Country; WonderNetwork cities carry the country's English name.
type City struct {
	Name       string  // name as published (UTF-8)
	ASCIIName  string  // ASCII transliteration of Name (equal to Name when the source has none)
	Country    string  // ISO country code (GeoNames) or country name (WonderNetwork); may be empty
	Lat, Lon   float64 // WGS84 degrees, north and east positive
	Population int     // inhabitants; 0 when unknown
}

// EarthRadiusKm is the mean Earth radius (IUGG R1) used by GreatCircleKm.
const EarthRadiusKm = 6371.0088

// GreatCircleKm returns the great-circle distance in km between two points
// given in degrees, by the haversine formula on a sphere of radius
// EarthRadiusKm.
func GreatCircleKm(lat1, lon1, lat2, lon2 float64) float64 {
	const rad = math.Pi / 180
	p1, p2 := lat1*rad, lat2*rad
	dp, dl := p2-p1, (lon2-lon1)*rad
	h := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
	return 2 * EarthRadiusKm * math.Asin(math.Sqrt(math.Min(1, h)))
}

// Km returns the great-circle distance in km from c to d.
func (c City) Km(d City) float64 { return GreatCircleKm(c.Lat, c.Lon, d.Lat, d.Lon) }

func validCoord(lat, lon float64) bool {
	return lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180
}

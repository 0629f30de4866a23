package truth

import (
	"math"

	"github.com/overworld/overworld/world"
)

// gridSpec is the observer's uniform grid over the game's bounds (x and
// y): cells as wide as a player's interest box, so that a view box covers
// at most 2 × 2 of them; locations outside the bounds fall in the edge
// cells. Without bounds it is a single cell; in a space of one dimension,
// a single row (y is no coordinate there).
type gridSpec struct {
	x0, y0     float64 // the bounds' lower corner
	cell       float64
	cols, rows int
}

// MaxCells bounds the observer's grid: Config.Bounds over cells of twice
// Config.Interest.
const MaxCells = 1 << 24

func newGridSpec(dims int, b world.Box, interest float64) gridSpec {
	if interest == 0 {
		return gridSpec{cell: math.Inf(1), cols: 1, rows: 1}
	}
	g := gridSpec{x0: b.Min[0], y0: b.Min[1], cell: 2 * interest, rows: 1}
	g.cols = max(1, int(math.Ceil((b.Max[0]-b.Min[0])/g.cell)))
	if dims > 1 {
		g.rows = max(1, int(math.Ceil((b.Max[1]-b.Min[1])/g.cell)))
	}
	return g
}

func (g *gridSpec) col(x float64) int {
	c := int(math.Floor((x - g.x0) / g.cell))
	return min(max(c, 0), g.cols-1)
}

func (g *gridSpec) row(y float64) int {
	r := int(math.Floor((y - g.y0) / g.cell))
	return min(max(r, 0), g.rows-1)
}

func (g *gridSpec) cellOf(p world.Point) int32 { return int32(g.row(p[1])*g.cols + g.col(p[0])) }

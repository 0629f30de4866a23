// Package report holds the helpers every lab package writes its results
// with: text tables (AlignTable, WriteTrimmed and the number formats),
// CSV files (WriteCSV, Float), PNG figures (NewPlot, SavePNG, SaveGrid,
// Headroom, VLine and the palette every figure shares) and the few
// statistics the reports print (Mean, Median, Quantile, Sum, Ms).
//
// It exists so that the papers' packages (lab/cma, lab/region,
// lab/balance, lab/spd, lab/colyseus) and the simulation harness print,
// write and draw alike, and so that none of them owns another's helpers.
// Everything here is a pure function of its arguments but the Write and
// Save functions, which create or overwrite the one file they are given
// (the caller creates its directory).
package report

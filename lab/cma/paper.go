package cma

// The CMA paper's printed numbers (Webb and Soh, MMCN 2008, §4), for the
// tables that put ours beside them. Everything else the paper shows only as
// curves (Figs. 4, 6, 7), which the table marks "–".
const (
	// paperWithinGreedy and paperWithinSA: players within 100 ms after
	// 1,000 joins (§4.1, Fig. 5).
	paperWithinGreedy = 869
	paperWithinSA     = 949
	// paperGreedyOptimalUntil: "both algorithms produce optimal results
	// when no mirror has reached its capacity (less than 175 joins)".
	paperGreedyOptimalUntil = 175
	// paperMoves: "the average number of transferring clients is minimal
	// (0.6 to 2 on average for each client join/leave)" (§2.2).
	paperMoves = "0.6–2"
)

// paperMirrors are the system sizes of the paper's Fig. 8.
var paperMirrors = []int{5, 10, 20}

// paperSpeed is the paper's Fig. 8: run time in ms of each method through
// each scenario with 5, 10 and 20 mirrors. The paper's J-SA and L-SA are the
// rebuilding algorithms of its Fig. 2 (cma.SARebuild).
var paperSpeed = []struct {
	scenario Scenario
	label    string
	ms       [3]float64
}{
	{ScenarioJoin, "J-greedy", [3]float64{12, 16, 15}},
	{ScenarioJoin, "J-SA", [3]float64{688, 3438, 16519}},
	{ScenarioLeave, "L-ignore", [3]float64{4, 3, 3}},
	{ScenarioLeave, "L-greedy", [3]float64{43, 50, 60}},
	{ScenarioLeave, "L-SA", [3]float64{888, 4683, 20077}},
	{ScenarioDynamic, "J-greedy/L-ignore", [3]float64{19, 21, 26}},
	{ScenarioDynamic, "J-greedy/L-greedy", [3]float64{52, 55, 60}},
	{ScenarioDynamic, "J-SA/L-SA", [3]float64{1542, 5053, 22769}},
}

// paperMillis returns the paper's run time for a scenario, label and system
// size, and whether the paper gives one.
func paperMillis(sc Scenario, label string, mirrors int) (float64, bool) {
	for i, m := range paperMirrors {
		if m != mirrors {
			continue
		}
		for _, p := range paperSpeed {
			if p.scenario == sc && p.label == label {
				return p.ms[i], true
			}
		}
	}
	return 0, false
}

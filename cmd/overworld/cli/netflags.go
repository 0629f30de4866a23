package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/overworld/overworld/geo"
)

// netFlags are the network-realism flags every simulated command shares:
// a named profile (--net) and the conditions it sets, each of which may
// be given on its own and then overrides the profile's value.
type netFlags struct {
	profile            string
	loss, dup, reorder float64
	jitter             time.Duration
	fl                 *pflag.FlagSet
}

// netUsage is the --net flag's usage line.
const netUsage = "network profile: none (the latency table's delays alone) or wan (1% loss, 10ms exponential jitter, 0.1% duplication); --loss, --jitter, --dup and --reorder override its parts"

// addNetFlags adds --net, --loss, --jitter, --dup and --reorder to fl,
// with profile as --net's default.
func addNetFlags(fl *pflag.FlagSet, f *netFlags, profile string) {
	f.fl = fl
	fl.StringVar(&f.profile, "net", profile, netUsage)
	fl.Float64Var(&f.loss, "loss", 0, "packet loss probability in [0, 1) (default: the --net profile's)")
	fl.DurationVar(&f.jitter, "jitter", 0, "mean of the exponential extra delay of every packet (default: the --net profile's)")
	fl.Float64Var(&f.dup, "dup", 0, "packet duplication probability in [0, 1) (default: the --net profile's)")
	fl.Float64Var(&f.reorder, "reorder", 0, "probability in [0, 1) that a packet is held back up to 50ms, so later ones overtake it (default: the --net profile's)")
}

// network returns the network the flags describe: the profile, with the
// parts given on the command line in its place. A bad profile or value is
// a user error (exit 2).
func (f *netFlags) network() (geo.Network, error) {
	n, err := geo.NetworkProfile(f.profile)
	if err != nil {
		return n, badInputf("--net: %v", err)
	}
	if f.fl.Changed("loss") {
		n.Loss = f.loss
	}
	if f.fl.Changed("jitter") {
		n.Jitter = f.jitter
	}
	if f.fl.Changed("dup") {
		n.Duplicate = f.dup
	}
	if f.fl.Changed("reorder") {
		n.Reorder = f.reorder
	}
	for _, c := range []struct {
		flag string
		err  error
	}{{"--loss", geo.Network{Loss: n.Loss}.Validate()}, {"--jitter", geo.Network{Jitter: n.Jitter}.Validate()},
		{"--dup", geo.Network{Duplicate: n.Duplicate}.Validate()}, {"--reorder", geo.Network{Reorder: n.Reorder}.Validate()}} {
		if c.err != nil {
			return n, badInputf("%s: %v", c.flag, c.err)
		}
	}
	return n, nil
}

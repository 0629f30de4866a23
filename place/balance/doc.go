// Package balance places instances (auxiliary games) on a cluster of
// servers as whole units, and overflows what the cluster cannot take to
// player-hosted servers.
package balance

package node

import (
	"fmt"
	"testing"
)

func TestDbgAuthority(t *testing.T) {
	l := newLedger()
	defer func() {
		for _, ev := range l.events {
			if ev.ID.String() == dbgID || ev.Kind == EvDead {
				fmt.Printf("%v %v self=%d id=%v e=%x node=%d writer=%d seq=%d v=%d base=%d\n", ev.At, ev.Kind, ev.Self, ev.ID, ev.Epoch, ev.Node, ev.Writer, ev.Seq, ev.Version, ev.Base)
			}
		}
	}()
	dbgLedger = l
	runAuthority(t, dbgSeed)
}

var dbgSeed uint64 = 4
var dbgID = "2.2"

package bridge_test

import (
	"flag"
	"testing"
	"time"

	"github.com/miohq/mio/db/dbtest"
)

// natsDown is how long TestNATSDownThenBack keeps the nats-server stopped
// while messages are ingested (30 s, an outage NATS clients ride out; the package's tests run in
// parallel, so it stays well under a minute). Shorten it with
// -nats.down=5s while working on the package.
var natsDown = flag.Duration("nats.down", 30*time.Second, "how long TestNATSDownThenBack keeps NATS stopped")

func TestMain(m *testing.M) { dbtest.Main(m) }

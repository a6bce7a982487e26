package admin_test

import (
	"testing"

	"github.com/miohq/mio/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

package top

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWritePlain: --once's output, tables without terminal control.
func TestWritePlain(t *testing.T) {
	t.Parallel()
	s := fixture()
	s.Consumers, s.Dead = s.Consumers[:2], s.Dead[:1]
	rates := NewRates(RateWindow)
	rates.Add(s.At, s.Counters)
	var b bytes.Buffer
	require.NoError(t, WritePlain(&b, "http://127.0.0.1:9090", s, rates))
	require.Equal(t, `mio top  http://127.0.0.1:9090  tenant all  2026-11-28T15:04:05Z

CONSUMERS
TENANT                          CONSUMER                            PENDING  ACK PENDING  REDELIVERED  DEAD  OLDEST PENDING
a tenant with a very long name  agent-37-with-a-long-consumer-name  12       37           0            0     37m00s
acme                            agent-24-with-a-long-consumer-name  12       24           0            0     24m00s

RIVER QUEUES
QUEUE     AVAILABLE  RUNNING  RETRYABLE  OLDEST AVAILABLE
default   3          1        0          -
dispatch  0          0        2          1m30s

CHANNELS (this process since it started, all tenants)
CHANNEL  RECEIVED  SENT  RECEIVED/S  SENT/S
slack    120       30    -           -
webhook  7         0     -           -

DEAD LETTERS (newest 50)
DEAD AT               KIND      TENANT  CHANNEL  ATTEMPTS  ID                                    LAST ERROR
2026-11-28T15:01:05Z  outbound  acme    slack    5         0190cccc-0000-7000-8000-000000000000  slack: chat.postMessage: channel_not_found [31mand a second line that is far too long for any terminal
`, b.String())
}

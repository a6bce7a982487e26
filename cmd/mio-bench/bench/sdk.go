package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// SDKOptions configure the SDK benchmark.
type SDKOptions struct {
	// Messages each consume loop drains (Go, Python, TypeScript each read
	// all of them through a consumer of its own). Default 20,000.
	Messages int
	// Batch per pull. Default 100.
	Batch int
	// Threads: handler threads of each loop (Go: pullers). Default 4.
	Threads int
	// Replies answered by each of reply-with-ack and ack + send.
	// Default 2,000.
	Replies int
	// SDKDir is the repository root holding sdk/python and sdk/typescript
	// (the TypeScript SDK must be built: npm run build). Default ".".
	SDKDir string
}

// SDKLoop is one consume loop's figure; Skipped says why it did not run.
type SDKLoop struct {
	Name     string
	Messages int
	Elapsed  time.Duration
	PerSec   float64
	Skipped  string
}

// SDKResult holds the figures of one run.
type SDKResult struct {
	Batch, Threads  int
	Loops           []SDKLoop
	Replies         int
	ReplyAckPerSec  float64 // reply with ack, one request per message
	AckSendPerSec   float64 // send, then ack, two requests per message
	ReplyAckElapsed time.Duration
	AckSendElapsed  time.Duration
}

// SDK drains the same preloaded messages with the Go client (the
// reference), the Python SDK's consume loop and the TypeScript SDK's,
// each through a consumer of its own (pull batch + ack, no-op handler),
// then answers messages with reply-with-ack and with separate send + ack
// calls, in the same run.
func SDK(ctx context.Context, env *Env, opts SDKOptions) (*SDKResult, error) {
	if opts.Messages == 0 {
		opts.Messages = 20_000
	}
	if opts.Batch == 0 {
		opts.Batch = 100
	}
	if opts.Threads == 0 {
		opts.Threads = 4
	}
	if opts.Replies == 0 {
		opts.Replies = 2_000
	}
	if opts.SDKDir == "" {
		opts.SDKDir = "."
	}
	cs, err := newConsumerSetup(ctx, env, "bench-sdk")
	if err != nil {
		return nil, err
	}
	defer cs.pool.Close()
	box, _ := secretbox.New(env.MasterKey)
	token, _, err := admin.New(cs.pool, box, env.BaseURL).TokenCreate(ctx, cs.tenant.ID, "sdk", []db.Role{db.RoleConsume, db.RoleProduce})
	if err != nil {
		return nil, err
	}
	if err := preload(ctx, env, cs.tenant.ID, cs.account.ID, opts.Messages); err != nil {
		return nil, err
	}
	c := client.New(env.BaseURL, token)
	res := &SDKResult{Batch: opts.Batch, Threads: opts.Threads, Replies: opts.Replies}
	cfg := client.ConsumerConfig{MaxAckPending: 100000}

	if _, err := c.PutConsumer(ctx, "sdk-go", cfg); err != nil {
		return nil, err
	}
	n, elapsed, err := goLoop(ctx, c, "sdk-go", opts)
	if err != nil {
		return nil, err
	}
	res.Loops = append(res.Loops, SDKLoop{Name: "Go client (reference)", Messages: n, Elapsed: elapsed, PerSec: float64(n) / elapsed.Seconds()})

	for _, l := range []struct{ name, consumer, tool string }{
		{"Python SDK consume()", "sdk-python", "python3"},
		{"TypeScript SDK consume()", "sdk-typescript", "node"},
	} {
		if _, err := c.PutConsumer(ctx, l.consumer, cfg); err != nil {
			return nil, err
		}
		loop := SDKLoop{Name: l.name}
		out, err := runLoop(ctx, l.tool, l.consumer, env.BaseURL, token, opts)
		switch {
		case errors.Is(err, errNoTool):
			loop.Skipped = err.Error()
		case err != nil:
			return res, fmt.Errorf("%s: %w", l.name, err)
		default:
			loop.Messages, loop.Elapsed = out.n, out.elapsed
			loop.PerSec = float64(out.n) / out.elapsed.Seconds()
		}
		res.Loops = append(res.Loops, loop)
	}

	// Reply with ack against send + ack, each answering opts.Replies
	// messages through a consumer of its own.
	for _, v := range []struct {
		consumer string
		elapsed  *time.Duration
		perSec   *float64
	}{{"sdk-reply", &res.ReplyAckElapsed, &res.ReplyAckPerSec}, {"sdk-send-ack", &res.AckSendElapsed, &res.AckSendPerSec}} {
		if _, err := c.PutConsumer(ctx, v.consumer, cfg); err != nil {
			return nil, err
		}
		d, err := answerLoop(ctx, c, v.consumer, v.consumer == "sdk-reply", opts)
		if err != nil {
			return res, err
		}
		*v.elapsed, *v.perSec = d, float64(opts.Replies)/d.Seconds()
	}
	return res, nil
}

// goLoop drains opts.Messages with opts.Threads pullers (pull batch, ack
// the batch).
func goLoop(ctx context.Context, c *client.Client, consumer string, opts SDKOptions) (int, time.Duration, error) {
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		errs  atomic.Value
	)
	start := time.Now()
	for range opts.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for total.Load() < int64(opts.Messages) && ctx.Err() == nil {
				ds, err := c.Pull(ctx, consumer, opts.Batch, 0)
				if err != nil {
					errs.Store(err)
					return
				}
				if len(ds) == 0 {
					continue // the others hold the rest
				}
				ids := make([]uuid.UUID, len(ds))
				for i, d := range ds {
					ids[i] = d.DeliveryID
				}
				if _, err := c.Ack(ctx, consumer, ids...); err != nil {
					errs.Store(err)
					return
				}
				total.Add(int64(len(ds)))
			}
		}()
	}
	wg.Wait()
	if err, _ := errs.Load().(error); err != nil {
		return 0, 0, err
	}
	return int(total.Load()), time.Since(start), nil
}

// answerLoop answers opts.Replies messages with opts.Threads workers,
// with reply-with-ack (one request per message) or send then ack (two).
func answerLoop(ctx context.Context, c *client.Client, consumer string, withAck bool, opts SDKOptions) (time.Duration, error) {
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		errs  atomic.Value
	)
	start := time.Now()
	for range opts.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for total.Load() < int64(opts.Replies) && ctx.Err() == nil {
				ds, err := c.Pull(ctx, consumer, min(opts.Batch, 25), 0)
				if err != nil {
					errs.Store(err)
					return
				}
				for _, d := range ds {
					cmd := envelope.SendCommand{IdempotencyKey: consumer + ":" + d.Message.ID.String(), Text: "answer"}
					if withAck {
						_, err = c.Reply(ctx, consumer, d.DeliveryID, cmd)
					} else {
						cmd.AccountID, cmd.ConversationID = d.Message.AccountID, d.Message.Conversation.ID
						if _, err = c.Send(ctx, cmd); err == nil {
							_, err = c.Ack(ctx, consumer, d.DeliveryID)
						}
					}
					if err != nil {
						errs.Store(err)
						return
					}
					total.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := errs.Load().(error); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

var errNoTool = errors.New("not installed")

type loopOut struct {
	n       int
	elapsed time.Duration
}

// The consume loops of the SDKs: a no-op handler until n messages were
// handled; each prints "<handled> <seconds>".
const (
	pythonLoop = `import sys, threading, time
sys.path.insert(0, sys.argv[1])
import mio
url, token, name, n, batch, threads = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
con = mio.Client(url, token).consumer(name)
done, lock, stop, end = [0], threading.Lock(), threading.Event(), [0.0]
def handle(d):
    with lock:
        done[0] += 1
        if done[0] == n:
            end[0] = time.time()
            stop.set()
t0 = time.time()
con.consume(handle, batch=batch, concurrency=threads, wait=1, stop=stop)
print(done[0], (end[0] or time.time()) - t0)
`
	typescriptLoop = `const [sdk, url, token, name, n, batch, threads] = process.argv.slice(1);
const { Client } = await import(sdk);
const con = new Client(url, token).consumer(name);
const ctl = new AbortController();
let done = 0;
let end = 0;
const t0 = performance.now();
await con.consume(() => { if (++done === Number(n)) { end = performance.now(); ctl.abort(); } }, { batch: Number(batch), concurrency: Number(threads), signal: ctl.signal });
console.log(done, ((end || performance.now()) - t0) / 1000);
`
)

// runLoop runs one SDK's consume loop as a child process.
func runLoop(ctx context.Context, tool, consumer, baseURL, token string, opts SDKOptions) (*loopOut, error) {
	bin, err := exec.LookPath(tool)
	if err != nil {
		return nil, fmt.Errorf("%s %w", tool, errNoTool)
	}
	root, err := filepath.Abs(opts.SDKDir)
	if err != nil {
		return nil, err
	}
	args := []string{baseURL, token, consumer, strconv.Itoa(opts.Messages), strconv.Itoa(opts.Batch), strconv.Itoa(opts.Threads)}
	var cmd *exec.Cmd
	if tool == "python3" {
		cmd = exec.CommandContext(ctx, bin, append([]string{"-c", pythonLoop, filepath.Join(root, "sdk", "python", "src")}, args...)...)
	} else {
		dist := filepath.Join(root, "sdk", "typescript", "dist", "index.js")
		if _, err := os.Stat(dist); err != nil {
			return nil, fmt.Errorf("sdk/typescript/dist %w (cd sdk/typescript && npm ci && npm run build)", errNoTool)
		}
		cmd = exec.CommandContext(ctx, bin, append([]string{"--input-type=module", "-e", typescriptLoop, "file://" + dist}, args...)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		return nil, fmt.Errorf("unexpected output %q", out)
	}
	n, err1 := strconv.Atoi(f[len(f)-2])
	secs, err2 := strconv.ParseFloat(f[len(f)-1], 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("unexpected output %q", out)
	}
	return &loopOut{n: n, elapsed: time.Duration(secs * float64(time.Second))}, nil
}

// Print writes the report.
func (r *SDKResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench sdk — consume loops: pull batch %d + ack, %d handler threads, no-op handler\n", r.Batch, r.Threads)
	var ref float64
	for _, l := range r.Loops {
		if l.Skipped != "" {
			fmt.Fprintf(w, "  %-28s skipped: %s\n", l.Name, l.Skipped)
			continue
		}
		if ref == 0 {
			ref = l.PerSec
		}
		fmt.Fprintf(w, "  %-28s %10.0f msg/s   (%d in %s; %.2f x Go)\n", l.Name, l.PerSec, l.Messages, l.Elapsed.Round(time.Millisecond), l.PerSec/ref)
	}
	fmt.Fprintf(w, "  targets: Python >= 5,000 msg/s (batch 100, 4 threads), TypeScript >= 10,000 msg/s\n")
	fmt.Fprintf(w, "answers, %d per variant, %d workers (Go client)\n", r.Replies, r.Threads)
	fmt.Fprintf(w, "  reply with ack               %10.0f msg/s   (%s)\n", r.ReplyAckPerSec, r.ReplyAckElapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  send, then ack               %10.0f msg/s   (%s)\n", r.AckSendPerSec, r.AckSendElapsed.Round(time.Millisecond))
	if r.AckSendPerSec > 0 {
		fmt.Fprintf(w, "  ratio                        %10.2f   (target >= 1.0)\n", r.ReplyAckPerSec/r.AckSendPerSec)
	}
}

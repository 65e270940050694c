package journaltest

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/tablejournal/tablejournal/journal/embedded"
)

// Cluster is an in-process JetStream cluster: nodes with routes to each
// other on loopback, one store folder each, the pattern of nats-server's
// own cluster tests. A node can be stopped and started again on the same
// ports and store, as an operator restarts one.
type Cluster struct {
	t    testing.TB
	name string

	mu    sync.Mutex
	nodes []*clusterNode
}

type clusterNode struct {
	name        string
	dir         string
	port, route int
	srv         *server.Server // nil while stopped
}

// StartCluster starts an n-node JetStream cluster (n is 3 for R3 streams),
// waits until it has elected a meta leader and every node is current, and
// shuts every node down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t, name: fmt.Sprintf("tj-%d", rand.Uint32())}
	ports := freePorts(t, 2*n)
	for i := 0; i < n; i++ {
		c.nodes = append(c.nodes, &clusterNode{
			name: fmt.Sprintf("n%d", i+1), dir: t.TempDir(), port: ports[2*i], route: ports[2*i+1],
		})
	}
	t.Cleanup(c.Shutdown)
	for i := range c.nodes {
		if err := c.start(i); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitReady()
	return c
}

// freePorts returns n distinct free loopback ports below Linux's ephemeral
// range (32768 and up), so that no outgoing connection takes one while a
// node is down for a restart.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	seen := make(map[int]bool)
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatal("no free ports")
		}
		p := 20000 + rand.IntN(12000)
		if seen[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		seen[p] = true
		ports = append(ports, p)
	}
	return ports
}

func (c *Cluster) options(i int) *server.Options {
	nd := c.nodes[i]
	var routes []*url.URL
	for j, o := range c.nodes {
		if j != i {
			routes = append(routes, &url.URL{Scheme: "nats-route", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(o.route))})
		}
	}
	return &server.Options{
		ServerName:             nd.name,
		Host:                   "127.0.0.1",
		Port:                   nd.port,
		JetStream:              true,
		StoreDir:               nd.dir,
		JetStreamMaxMemory:     256 << 20,
		JetStreamMaxStore:      4 << 30,
		MaxPayload:             embedded.MaxPayload,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
		Cluster:                server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: nd.route},
		Routes:                 routes,
	}
}

func (c *Cluster) start(i int) error {
	nd := c.nodes[i]
	var err error
	// The port was free a moment ago; retry briefly in case the old
	// listener of a restarted node is still closing.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var ns *server.Server
		ns, err = server.NewServer(c.options(i))
		if err == nil {
			ns.SetLoggerV2(embedded.ServerLogger(clusterLogger().With("node", nd.name)), false, false, false)
			ns.Start()
			if ns.ReadyForConnections(10 * time.Second) {
				c.mu.Lock()
				nd.srv = ns
				c.mu.Unlock()
				return nil
			}
			ns.Shutdown()
			ns.WaitForShutdown()
			err = fmt.Errorf("not ready for connections")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start cluster node %s on port %d: %w", nd.name, nd.port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// URL returns the client URL listing every node, comma-separated, as a
// client of a cluster is configured.
func (c *Cluster) URL() string {
	var us []string
	for _, nd := range c.nodes {
		us = append(us, "nats://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.port)))
	}
	return strings.Join(us, ",")
}

// Size returns the number of nodes.
func (c *Cluster) Size() int { return len(c.nodes) }

// Stop shuts node i down (its store stays for Start).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	ns := c.nodes[i].srv
	c.nodes[i].srv = nil
	c.mu.Unlock()
	if ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
}

// Start starts the stopped node i again on its ports and store, and
// returns once it accepts clients (it may still be catching up: see
// WaitReady and WaitStreamCurrent). It returns an error rather than fail
// the test, so that a chaos goroutine can call it.
func (c *Cluster) Start(i int) error { return c.start(i) }

// Restart stops node i and starts it again, as an operator restarts one
// server of a cluster (a clean shutdown: its leaders step down first).
func (c *Cluster) Restart(i int) error {
	c.Stop(i)
	return c.start(i)
}

// Server returns node i's server, nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].srv
}

// Shutdown stops every node. It is registered with t.Cleanup.
func (c *Cluster) Shutdown() {
	for i := range c.nodes {
		c.Stop(i)
	}
}

// WaitReady waits until the running nodes have a meta leader that knows
// every node as a peer and every running node is current, failing the test
// after 40 s.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	if err := c.WaitReadyErr(context.Background(), 40*time.Second); err != nil {
		c.t.Fatal(err)
	}
}

// WaitReadyErr is WaitReady returning its error, waiting at most d.
func (c *Cluster) WaitReadyErr(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		var leader *server.Server
		current := true
		for i := range c.nodes {
			ns := c.Server(i)
			if ns == nil {
				continue
			}
			if ns.JetStreamIsLeader() {
				leader = ns
			}
			if !ns.JetStreamIsCurrent() {
				current = false
			}
		}
		if leader != nil && current && len(leader.JetStreamClusterPeers()) == len(c.nodes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("JetStream cluster %s not ready after %s (leader %v, all current %v)", c.name, d, leader != nil, current)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitStreamCurrent waits until every running node's replica of stream (in
// the global account) is current, so that stopping another node leaves a
// quorum that has every acknowledged message.
func (c *Cluster) WaitStreamCurrent(ctx context.Context, stream string) error {
	for {
		ok := true
		for i := range c.nodes {
			ns := c.Server(i)
			if ns != nil && !ns.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				ok = false
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s not current on every node: %w", stream, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// clusterLogger is Logger, but errors only by default: a cluster warns
// about every election and restart a test provokes.
func clusterLogger() *slog.Logger {
	if os.Getenv("TABLEJOURNAL_NATS_LOG") != "" {
		return Logger()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

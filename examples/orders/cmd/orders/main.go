// Command orders runs the example orders service (package orders) on a
// running tablejournal pipeline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/examples/orders"
	"github.com/tablejournal/tablejournal/store/stores"
)

func main() {
	natsURL := flag.String("nats", "nats://127.0.0.1:4222", "NATS URL of the journal")
	tables := flag.String("tables", "", "table store, as the projector's --tables (an Azure connection string, or sqlite:PATH)")
	dataDir := flag.String("data-dir", "data", "the projector's data folder, for its embedded store when --tables is empty")
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address")
	checkpoint := flag.String("checkpoint", "orders-counter", "durable change-feed checkpoint of the status counter")
	flag.Parse()
	if err := run(*natsURL, *tables, *dataDir, *listen, *checkpoint); err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

func run(natsURL, tables, dataDir, listen, checkpoint string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The projector's --tables forms: "" for the embedded store in its
	// data folder, sqlite:PATH, or an Azure Tables connection string.
	st, closer, err := stores.Open(ctx, tables, dataDir)
	if err != nil {
		return err
	}
	defer closer.Close()
	c, err := tablejournal.Connect(ctx, natsURL, tablejournal.WithStore(st), tablejournal.WithIssuer("orders"))
	if err != nil {
		return err
	}
	defer c.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	// The test reads the address from here when --listen has port 0.
	fmt.Println("listening on", ln.Addr())

	var counter orders.Counter
	mux := http.NewServeMux()
	mux.Handle("/orders/", orders.New(c).Handler())
	mux.HandleFunc("GET /counts", counter.ServeCounts)
	srv := &http.Server{Handler: mux}
	errs := make(chan error, 2)
	go func() { errs <- counter.Run(ctx, c, checkpoint) }()
	go func() { errs <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	srv.Shutdown(context.Background())
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	slog.Info("orders stopped")
	return err
}

package erasure

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrDenyDelete reports a stream that denies deleting messages, so that an
// erase cannot remove what it holds of the erased key. JetStream never
// lifts deny-delete. Checked with errors.Is.
var ErrDenyDelete = errors.New("stream denies message deletes")

// checkDeletable fails with ErrDenyDelete, saying what to do, when stream
// s denies deleting messages.
func checkDeletable(s jetstream.Stream) error {
	cfg := s.CachedInfo().Config
	if !cfg.DenyDelete {
		return nil
	}
	return fmt.Errorf("%w: stream %s was created with deny-delete, which JetStream never lifts, so an erase cannot remove the key's messages from it: move the commands to a new journal that allows it (stop the projectors; `replay --stream %s move --new-stream NEWNAME --allow-msg-delete --apply --cutover --delete-old`), point everything at --stream NEWNAME, then erase",
		ErrDenyDelete, cfg.Name, cfg.Name)
}

// secureDelete removes the messages seqs of stream s with JetStream's secure
// delete (the stored message is overwritten, not only unlinked). A message
// already gone counts as deleted. It returns how many it deleted now.
func secureDelete(ctx context.Context, s jetstream.Stream, seqs []uint64) (int, error) {
	if err := checkDeletable(s); err != nil {
		return 0, err
	}
	n := 0
	for _, seq := range seqs {
		err := s.SecureDeleteMsg(ctx, seq)
		if err == nil {
			n++
			continue
		}
		// The server answers a message already gone with a generic
		// delete failure: ask whether it is there.
		if _, gerr := s.GetMsg(ctx, seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
			continue
		}
		return n, fmt.Errorf("secure delete of seq %d in %s: %w", seq, s.CachedInfo().Config.Name, err)
	}
	return n, nil
}

package projection

// EraseOp is the op of the change-feed notice of an erase (SPEC §5, §10):
// one event on the partition's subject carrying the key and no values
// (no before, no after), so that consumers erase their copies. A row
// erase names its RK; a partition erase has Partition set and RK "".
const EraseOp ChangeKind = "erase"

// eraseNotice is the change of an applied erase: its notice; none for an
// entry that is no erase.
func eraseNotice(e Entry) []Change {
	if e.Erase == nil {
		return nil
	}
	if e.Erase.RK == nil {
		return []Change{{Kind: EraseOp, Partition: true}}
	}
	return []Change{{Kind: EraseOp, RK: *e.Erase.RK}}
}

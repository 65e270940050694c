package status

import "slices"

// addPruned counts the pruned rows of the instance reporting s once,
// however many shards it reports: each report carries the instance's
// whole count, and the newest read (the highest) is kept.
func (st *Overview) addPruned(s ShardStatus) {
	if s.reporter == "" || s.pruned == 0 {
		return
	}
	if st.prunedBy == nil {
		st.prunedBy = map[string]int64{}
	}
	if old := st.prunedBy[s.reporter]; s.pruned > old {
		st.Totals.PrunedRows += s.pruned - old
		st.prunedBy[s.reporter] = s.pruned
	}
}

// addBehind takes the behind partitions of the instance reporting s, once
// per instance (each report carries the instance's whole list).
func (st *Overview) addBehind(s ShardStatus) {
	if s.reporter == "" || s.nBehind == 0 || st.behindBy[s.reporter] {
		return
	}
	if st.behindBy == nil {
		st.behindBy = map[string]bool{}
	}
	st.behindBy[s.reporter] = true
	st.Totals.BehindCount += s.nBehind
	for _, b := range s.behind {
		if !slices.Contains(st.Totals.Behind, b) {
			st.Totals.Behind = append(st.Totals.Behind, b)
		}
	}
}

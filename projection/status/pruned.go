package status

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

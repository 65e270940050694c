package tablejournal

// WatchesKept is how many outcome watches c keeps for reads after its
// writes (recentWatches).
func WatchesKept(c *Client) int {
	c.watches.mu.Lock()
	defer c.watches.mu.Unlock()
	return len(c.watches.byID)
}

package tablejournal

// WatchesKept is how many outcome watches c keeps for reads after its
// writes (recentPublishes).
func WatchesKept(c *Client) int {
	c.recent.mu.Lock()
	defer c.recent.mu.Unlock()
	n := 0
	for _, p := range c.recent.ring {
		if p.w != nil {
			n++
		}
	}
	return n
}

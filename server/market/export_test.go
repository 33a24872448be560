package market

// Views of delivery's in-memory counters for the external tests.

// MemorySpent returns what delivery counts as the campaign's spend today.
func MemorySpent(s *Service, campaignID string) (int64, bool) {
	d := s.current.Load()
	if d == nil || d.campaigns[campaignID] == nil {
		return 0, false
	}
	return d.campaigns[campaignID].spent.Load(), true
}

// MemoryAppSpent returns what delivery counts as the app's spend today.
func MemoryAppSpent(s *Service, appID string) (int64, bool) {
	d := s.current.Load()
	if d == nil || d.advertisers[appID] == nil {
		return 0, false
	}
	return d.advertisers[appID].spent.Load(), true
}

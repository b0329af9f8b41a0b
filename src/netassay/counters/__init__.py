"""netassay.counters"""

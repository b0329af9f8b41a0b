"""netassay.testbed"""

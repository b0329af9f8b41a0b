"""netassay.store"""

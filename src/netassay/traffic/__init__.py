"""netassay.traffic"""

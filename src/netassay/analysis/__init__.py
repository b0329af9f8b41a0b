"""netassay.analysis"""

"""netassay.campaign"""

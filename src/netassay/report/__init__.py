"""netassay.report"""

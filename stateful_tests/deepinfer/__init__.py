"""deepinfer"""
